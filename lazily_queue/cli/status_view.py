"""Rich tables for a node status document (see :func:`lazily_queue.status.node_status`)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text


class ShapeError(ValueError):
    """A document that is not what a node of this version answers at that path."""


class _Console(Console):
    """Stdout, read whole when piped (no column cut); a reader that went away raises
    :class:`BrokenPipeError`, which the command line ends with status 141 (rich exits
    with status 1)."""

    def __init__(self) -> None:
        super().__init__(width=None if sys.stdout.isatty() else 240)

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


def show(view: Callable[[dict[str, Any]], list[Table]], document: Any) -> None:
    """Print ``view(document)`` on stdout; a document ``view`` cannot read (another
    program's, or a field missing or of another type) raises :class:`ShapeError` before
    anything is printed."""
    try:
        tables = view(document)
    except (LookupError, TypeError, AttributeError, ValueError) as exc:
        raise ShapeError(f"{type(exc).__name__}: {exc}") from None
    _Console().print(*tables)


def _dash(value: Any) -> str:
    return "-" if value is None else str(value)


def _table(title: str, columns: Sequence[str], rows: Iterable[Sequence[Any]],
           right: frozenset[str] = frozenset()) -> Table:
    table = Table(title=Text(title))  # names and reasons as written, never markup
    for column in columns:
        table.add_column(column, justify="right" if column in right else "left")
    for row in rows:
        table.add_row(*(Text(_dash(cell)) for cell in row))
    return table


def _disk(status: dict[str, Any]) -> str:
    disk = status.get("disk") or {}
    journal = "writable" if disk.get("writable", True) else f"NOT WRITABLE: {disk.get('error')}"
    if disk.get("snapshot_error"):
        return f"{journal}; the leader's snapshot NOT STORED: {disk['snapshot_error']}"
    return journal


def _state(status: dict[str, Any]) -> str:
    """The state column: the Raft state, ``REMOVED`` first when the other members refuse
    this node as removed (the health reasons say since when and what to do)."""
    return f"REMOVED ({status['state']})" if status.get("removed") else str(status["state"])


def _where_lag_is(status: dict[str, Any]) -> str:
    """On a follower: where the leader, which knows the members' match index and lag,
    shows its view."""
    if status["state"] == "leader":
        return ""
    leader = status.get("leader")
    if leader is None:
        return " (match index and lag are known on the leader; none is known now)"
    page = next((m.get("page") for m in status["members"] if m["id"] == leader), None)
    where = (f"`lazily-queue status --url {page}` shows its view" if page
             else "its page is not known here")
    return f" (match index and lag are known on the leader, node {leader}: {where})"


def render(status: dict[str, Any]) -> list[Table]:
    """The cluster table, the health reasons (when the health is not ok), the members
    table, the bounded tables and one table per non-empty queue family."""
    s = status
    tables = [
        _table(f"node {s['node']} of cluster {s['cluster']!r}",
               ("state", "leader", "term", "commit index", "applied index", "quorum",
                "durability", "journal"),
               [(_state(s), s["leader"], s["term"], s["commit_index"], s["last_applied"],
                 "yes" if s["has_quorum"] else "NO", s["durability"], _disk(s))]),
        _table(f"members{_where_lag_is(s)}",
               ("id", "role", "link", "match index", "lag"),
               [(m["id"] + (" (this node)" if m["self"] else ""), m["role"],
                 _link(m), m["match_index"], m["lag"])
                for m in s["members"]],
               right=frozenset({"match index", "lag"})),
    ]
    health = _health(s)
    if health is not None:
        tables.insert(1, health)
    clients = s.get("clients")
    if clients:
        tables.append(_table(
            "clients", ("addresses", "connected", "requests", "refused", "in flight",
                        "links refused"),
            [(", ".join(clients["addresses"]), clients["connections"], clients["requests"],
              clients["refused"], clients["in_flight"], clients.get("links_refused", 0))],
            right=frozenset({"connected", "requests", "refused", "in flight",
                             "links refused"})))
    bounded = s.get("tables")
    if bounded:
        tables.append(_bounded(bounded))
    tables.extend(object_tables(s))
    return tables


def object_tables(s: dict[str, Any], caption: str | None = None) -> list[Table]:
    """One table per non-empty queue family of ``s`` (a status, or a page of
    ``/objects.json`` as ``{kind: objects}``), each captioned with how many of the kind
    it lists (``caption`` when given, else from the status's ``objects``)."""
    tables: list[Table] = []
    if s.get("work_queues"):
        tables.append(_table(
            "work queues", ("name", "pending (lag)", "in flight", "dead letters", "receipts",
                            "workers"),
            [(name, w["pending"], w["in_flight"], w["dead_letters"], w.get("receipts"),
              _workers(w) or None)
             for name, w in s["work_queues"].items()],
            right=frozenset({"pending (lag)", "in flight", "dead letters", "receipts"})))
    if s.get("queues"):
        tables.append(_table(
            "queues", ("name", "depth", "capacity", "closed"),
            [(name, q["len"], q["capacity"], "yes" if q["closed"] else "no")
             for name, q in s["queues"].items()],
            right=frozenset({"depth"})))
    if s.get("topics"):
        tables.append(_table(
            "topics", ("name", "retained", "end offset", "subscribers (lag)",
                       "retention held by"),
            [(name, t["retained"], t["end_offset"],
              _subscribers(t) or None, _pinned(t.get("pinned_by")))
             for name, t in s["topics"].items()],
            right=frozenset({"retained", "end offset"})))
    for table, kind in zip(tables, [k for k in ("work_queues", "queues", "topics")
                                    if s.get(k)], strict=True):
        text = caption if caption is not None else _listed(s, kind)
        table.caption = None if text is None else Text(text)
    return tables


def _listed(s: dict[str, Any], kind: str) -> str | None:
    """How many of ``kind`` a status lists, when not all, and how to see the others."""
    counts = (s.get("objects") or {}).get(kind)
    if not counts or counts["listed"] >= counts["total"]:
        return None
    return (f"the {counts['listed']} largest of {counts['total']}; every one by name: "
            f"lazily-queue status --kind {kind} [--prefix P] [--offset N]")


def render_page(page: dict[str, Any]) -> list[Table]:
    """A page of ``/objects.json`` as the table a status shows for its kind."""
    first = page["offset"] + 1
    last = page["offset"] + len(page["objects"])
    where = f' whose name starts with "{page["prefix"]}"' if page["prefix"] else ""
    shown = f"{first}-{last}" if page["objects"] else "none"
    caption = f"showing {shown} of {page['matching']}{where} ({page['total']} in all)"
    if last < page["matching"]:
        caption += f"; next: --offset {page['offset'] + page['limit']}"
    tables = object_tables({page["kind"]: page["objects"]}, caption)
    if not tables:
        tables = [_table(page["kind"].replace("_", " "), ("name",), [])]
        tables[0].caption = Text(caption)
    return tables


def _bounded(t: dict[str, Any]) -> Table:
    """One row per bounded table of the applied state: its size, bound and share used
    (a figure a node of an earlier version does not give is a dash)."""
    sessions, ended, kept = t["client_sessions"], t["ended_sessions"], t["kept_results"]
    receipts, owners = t["receipts"], t["ephemeral_owners"]
    popped, popped_bytes = t.get("popped") or {}, t.get("popped_bytes") or {}
    rows = [
        ("client sessions", sessions["count"], sessions["limit"],
         f"{sessions['clients']} client(s)"),
        ("most of one client", sessions.get("most_per_client"), sessions["limit"],
         "gives one up first at the bound"),
        ("ended sessions", ended["count"], ended["limit"],
         f"each kept {ended['kept_ms'] // 60_000} min at most"),
        ("kept results (bytes)", kept["bytes"], kept["limit"],
         f"{kept['per_client_session']} per client session"),
        ("receipts", receipts["count"], receipts["limit"],
         f"{receipts['per_work_queue']} per work queue"),
        ("ephemeral owners", owners["sessions"], owners["limit"],
         f"{owners['subscriptions']} subscription(s)"),
        ("popped, not back", popped.get("count"), popped.get("limit"),
         f"{popped.get('per_session', '-')} per session"),
        ("popped (bytes)", popped_bytes.get("bytes"), popped_bytes.get("limit"),
         "in every snapshot"),
    ]
    return _table("bounded tables", ("table", "size", "bound", "used", "detail"),
                  [(name, size, bound,
                    f"{100 * size / bound:.0f}%" if bound and size is not None else None,
                    detail) for name, size, bound, detail in rows],
                  right=frozenset({"size", "bound", "used"}))


def _health(status: dict[str, Any]) -> Table | None:
    """One row per reason the node's health is not ok, leaving out the members' link
    problems, which the members table's link column shows."""
    health = status.get("health")
    if not isinstance(health, dict) or health.get("level", "ok") == "ok":
        return None
    shown = {f"member {m['id']}: {m['link_problem']}" for m in status["members"]
             if m.get("link_problem")}
    reasons = [r for r in health.get("reasons") or () if r not in shown]
    return _table(f"health: {health['level']}", ("reason",), [(r,) for r in reasons])


def _link(member: dict[str, Any]) -> str:
    """The link column: ``up``, or ``DOWN`` with why when this node knows it."""
    if member["connected"]:
        return "up"
    problem = member.get("link_problem")
    return f"DOWN: {problem}" if problem else "DOWN"


def _workers(w: dict[str, Any]) -> str:
    """The workers column: the busiest workers listed, and how many more there are."""
    total = w.get("workers_total", len(w["workers"]))
    if total is None:
        return "not counted (too many in flight)"
    shown = ", ".join(f"{k}: {v}" for k, v in w["workers"].items())
    more = total - len(w["workers"])
    return shown + (f", ... {more} more" if more > 0 else "")


def _subscribers(t: dict[str, Any]) -> str:
    """The subscribers column: the most lagging listed, and how many more there are."""
    shown = ", ".join(f"{k} ({v['lag']})" for k, v in t["subscribers"].items())
    more = t.get("subscribers_total", len(t["subscribers"])) - len(t["subscribers"])
    return shown + (f", ... {more} more" if more > 0 else "")


def _pinned(holder: dict[str, Any] | None) -> str | None:
    """The durable subscriber holding the topic's retention, and how many elements."""
    if holder is None:
        return None
    state = "" if holder["connected"] else " (offline)"
    return f"{holder['subscriber']}{state} pins {holder['entries']}"
