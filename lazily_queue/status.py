"""A node's status as plain JSON-ready data, and its leadership history.

:func:`local_status` is :meth:`Node.status`: the replica's Raft state, the disk,
``removed`` (the other members refuse this node as one removed from the cluster:
:func:`~lazily_queue.link_trouble.removal`; None otherwise), and the queues, topics
and work queues as applied here. :func:`node_status` extends it
with a ``members`` list (role,
connection, match index and replication lag, which only the leader knows), the
summed depths of every queue family and, when a :class:`LeadershipClock` runs, when
this node last became leader and when it first committed an entry of that term.
The status page, ``/status.json`` and ``lazily-queue status`` all show this shape, with
only the largest objects of each kind listed (:mod:`.object_listing`).
"""

from __future__ import annotations

import enum
import heapq
import time
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .background import StepObserver
from .core.groups import group_lag
from .core.work_views import WorkViews
from .health import health
from .object_listing import STATUS_OBJECTS, listed_sections, listed_sections_sliced, object_page
from .replicated.view import ReadView
from .subscriber_listing import retention_holder
from .vitals import journal_problem, journal_state

if TYPE_CHECKING:
    from .node import Node


class LeadershipClock(StepObserver):
    """Watches a node step by step and records, per term it led, two wall-clock times.

    ``became_leader`` is when it first saw itself leader; ``first_commit`` is when its
    commit index first reached an entry of its own term (the end of a failover, as
    writers see it). Times are ``time.time()`` seconds. Only the latest term it led is
    kept: a node that leads again and again for days holds one record.
    """

    def __init__(self, node: Node) -> None:
        self.node = node
        self.terms: dict[int, dict[str, float | None]] = {}



    def observe(self) -> None:
        """Record the current state (called after every step)."""
        engine = self.node.driver.replica.engine
        if not engine.is_leader:
            return
        term = engine.term
        record = self.terms.get(term)
        if record is None:
            self.terms.clear()  # an earlier term's record is never read again
            record = self.terms[term] = {"became_leader": time.time(), "first_commit": None}
        if record["first_commit"] is None:
            journal = self.node.driver.replica.journal
            if journal.term_at(engine.commit_index) == term:
                record["first_commit"] = time.time()

    def latest(self) -> dict[str, Any] | None:
        if not self.terms:
            return None
        term = max(self.terms)
        return {"term": term, **self.terms[term]}


def local_status(node: Node, *, objects: bool = True) -> dict[str, Any]:
    """Raft and queue state as seen from ``node`` (a running node); with ``objects``
    false, without the sections of :func:`state_status`."""
    driver = node.driver
    status = driver.replica.status()
    status["cluster"] = node.cluster
    status["durability"] = node.durability
    status["disk"] = journal_state(node)
    status["removed"] = _removal(node)
    if objects:
        status.update(state_status(node.view))
    mesh = getattr(driver.network, "mesh", None)
    if mesh is not None:
        status["listener"] = mesh.listener_stats()
    if node.clients is not None:
        status["clients"] = node.clients.stats()
    return status


def state_status(view: ReadView) -> dict[str, Any]:
    """The ``queues``, ``topics``, ``work_queues``, ``dedup`` and ``tables`` sections of
    a status.

    ``tables``: the size and bound of each bounded bookkeeping table of the applied
    state (client sessions, ended sessions, kept results, receipts, ephemeral owners:
    :func:`~lazily_queue.replicated.table_sizes.table_sizes`); a work queue's
    ``receipts`` is its share of them. ``dedup``: ``deduplicated_pushes`` counts the
    pushes and publishes this replica answered from the producer dedup window (their
    ``msg_id`` was still there) without applying them; ``window_len`` is the message
    ids held now (an expired id leaves at the next push carrying one). A work queue's
    ``workers`` and a topic's ``subscribers`` are bounded (see :func:`_workers` and
    :func:`subscribers_behind`); a topic's ``pinned_by`` names the durable subscriber
    holding its retention (:func:`~lazily_queue.subscriber_listing.retention_holder`).
    """
    status = _dedup(view)
    for section, table, entry in _sections(view):
        status[section] = {name: entry(name, table[name]) for name in sorted(table)}
    return status


def objects_page(view: ReadView, kind: str, prefix: str = "", offset: int = 0
                 ) -> dict[str, Any]:
    """One page of every object of ``kind`` by name, each with its status entry
    (:func:`~lazily_queue.object_listing.object_page`)."""
    return object_page(_sections(view), kind, prefix, offset, plain)


def _dedup(view: ReadView) -> dict[str, Any]:
    return {"dedup": {"deduplicated_pushes": view.deduplicated_pushes,
                      "window_len": view.dedup_window_len},
            "tables": view.table_sizes()}


def _sections(view: ReadView) -> list[tuple[str, Any, Callable[[str, Any], dict[str, Any]]]]:
    """Each object section of a status: its name, the view's table and the entry of one
    object."""
    def queue(_name: str, q: Any) -> dict[str, Any]:
        return {"len": q.len(), "closed": q.is_closed(), "capacity": q.capacity(),
                "delayed": q.delayed_len()}

    def topic(name: str, t: Any) -> dict[str, Any]:
        return {"base_offset": t.base_offset(), "end_offset": t.end_offset(),
                "retained": t.end_offset() - t.base_offset(),
                **subscribers_behind(records := t.subscriptions(), t.end_offset()),
                **retention_holder(records, t.end_offset()),
                **groups_behind(groups_of(view, name))}

    def work(_name: str, w: Any) -> dict[str, Any]:
        return {"pending": w.core.pending_len(), "in_flight": w.core.in_flight_len(),
                "dead_letters": w.core.dead_letter_len(), "delayed": w.core.delayed_len(),
                "receipts": len(w.table), **_workers(w.core)}

    return [("queues", view.queues, queue), ("topics", view.topics, topic),
            ("work_queues", view.work_queues, work)]


#: Workers a status lists per work queue: those with the most deliveries in flight.
MAX_WORKERS_SHOWN = 20
#: Above this many deliveries in flight a status does not count them per worker (the
#: count costs one pass over them, on the event loop, at every request).
MAX_WORKER_SCAN = 10_000


def _workers(core: WorkViews) -> dict[str, Any]:
    """``workers``: the :data:`MAX_WORKERS_SHOWN` workers with the most deliveries in
    flight (by name); ``workers_total``: how many workers hold one (``None``, and no
    workers listed, above :data:`MAX_WORKER_SCAN` deliveries in flight)."""
    if core.in_flight_len() > MAX_WORKER_SCAN:
        return {"workers": {}, "workers_total": None}
    counts = Counter(delivery.worker for delivery in core.in_flight())
    busiest = heapq.nsmallest(MAX_WORKERS_SHOWN, counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return {"workers": dict(sorted(busiest)), "workers_total": len(counts)}


#: Subscribers a status (and the lag metric) lists per topic: the most lagging ones.
MAX_SUBSCRIBERS_SHOWN = 100


def subscribers_behind(records: dict[str, dict[str, Any]], end: int) -> dict[str, Any]:
    """``subscribers``: the :data:`MAX_SUBSCRIBERS_SHOWN` subscribers furthest behind
    ``end``, by id, each with its ``lag``; ``subscribers_total``: how many there are."""
    behind = heapq.nsmallest(MAX_SUBSCRIBERS_SHOWN, records.items(),
                             key=lambda kv: (kv[1]["cursor"], kv[0]))
    return {"subscribers": {sid: {**rec, "lag": end - rec["cursor"]}
                            for sid, rec in sorted(behind)},
            "subscribers_total": len(records)}


def groups_of(view: ReadView, topic: str) -> dict[str, dict[str, Any]]:
    """The topic's consumer groups: each one's lag (not acked) and work queue's name."""
    found: dict[str, dict[str, Any]] = {}
    for group, name in sorted(view.groups.get(topic, {}).items()):
        state = view.work_queue(name)
        if state is not None:
            found[group] = {"lag": group_lag(state.core), "queue": name}
    return found


def groups_behind(groups: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """``groups``: of a topic's ``groups`` (:func:`groups_of`), the
    :data:`MAX_SUBSCRIBERS_SHOWN` furthest behind, by name; ``groups_total``: how many
    there are."""
    behind = heapq.nsmallest(MAX_SUBSCRIBERS_SHOWN, groups.items(),
                             key=lambda kv: (-kv[1]["lag"], kv[0]))
    return {"groups": dict(sorted(behind)), "groups_total": len(groups)}


def node_status(node: Node, clock: LeadershipClock | None = None, *,
                vitals: dict[str, Any] | None = None,
                peers: dict[str, dict[str, Any]] | None = None,
                term_changes: list[dict[str, Any]] | None = None,
                limit: int = STATUS_OBJECTS) -> dict[str, Any]:
    """This node's view of the cluster and its queues (see the module docstring), with
    the ``limit`` largest objects of each kind (:mod:`.object_listing`).

    ``vitals`` (this node's, :class:`~lazily_queue.vitals.Vitals`) and ``peers`` (the
    other members' as read by :class:`~lazily_queue.peer_pages.PeerPages`) add each
    member's page, version, uptime, fsync latency and free disk; ``term_changes`` (from
    the history) feeds the health summary.
    """
    status = local_status(node, objects=False)
    status.update(_dedup(node.view))
    status.update(listed_sections(_sections(node.view), limit))
    document: dict[str, Any] = plain(_completed(node, status, clock, vitals, peers,
                                                term_changes))
    return document


async def node_status_sliced(node: Node, clock: LeadershipClock | None = None, *,
                             vitals: dict[str, Any] | None = None,
                             peers: dict[str, dict[str, Any]] | None = None,
                             term_changes: list[dict[str, Any]] | None = None,
                             limit: int = STATUS_OBJECTS) -> dict[str, Any]:
    """:func:`node_status`, its objects ranked with the loop running between slices
    (:func:`~lazily_queue.object_listing.listed_sections_sliced`)."""
    status = local_status(node, objects=False)
    sections = _dedup(node.view)
    sections.update(await listed_sections_sliced(_sections(node.view), limit, plain))
    status.update(sections)
    status = _completed(node, status, clock, vitals, peers, term_changes)
    rest: dict[str, Any] = plain({k: v for k, v in status.items() if k not in sections})
    return {key: sections[key] if key in sections else rest[key] for key in status}


def _completed(node: Node, status: dict[str, Any], clock: LeadershipClock | None,
               vitals: dict[str, Any] | None, peers: dict[str, dict[str, Any]] | None,
               term_changes: list[dict[str, Any]] | None) -> dict[str, Any]:
    """``status`` with its members, totals, leadership, time, health and vitals."""
    status["members"] = _members(node, status, vitals, peers or {})
    status["totals"] = status.pop("object_totals")
    status["leadership"] = clock.latest() if clock is not None else None
    status["time"] = time.time()
    status["health"] = health(status, term_changes or [])
    if vitals is not None:
        status["vitals"] = vitals
    return status


def bare_status(node: Node, *, objects: bool = True) -> dict[str, Any]:
    """What the metrics and the admin API's member list read: :func:`node_status`
    without the totals, the health summary, the vitals and the plain copy (which cost
    more than the rest at many objects), and with ``objects`` false without the objects
    (:func:`state_status`)."""
    status = local_status(node, objects=objects)
    status["members"] = _members(node, status, None, {})
    return status


#: The link problem of a member that said it was stopping before its links closed.
STOPPED = "it stopped cleanly (it said so before closing its links)"


def _members(node: Node, status: dict[str, Any], vitals: dict[str, Any] | None,
             peers: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per member: role (``leader``, ``follower`` or ``unreachable``: a
    member this node has no link to is never shown as a follower; this node's is
    ``removed`` when the status's ``removed`` says the others refuse it), reachability,
    match index and lag (known on the leader), its page and vitals when known, and
    ``link_problem``: why an unreachable member's link failed, as far as this node knows
    (a refused handshake, say, or :data:`STOPPED` until it answers a dial or probe
    again; ``None`` otherwise), and
    ``disk_problem``: why its disk refuses its journal or the leader's snapshot, as its
    own status or its last vitals read without error say (``None`` otherwise), and
    ``vitals_proof``: ``own``, ``proven`` (:mod:`.vitals_proof`), ``none`` (read without
    a cluster secret), ``refused`` (the last answer was not proven) or ``None``."""
    leader = status["leader"]
    me = status["node"]
    connected = set(status["connected"])
    match = status["match_index"] if status["state"] == "leader" else {}
    pages = node.view.member_pages
    members = []
    for member in status["members"]:
        reachable = member == me or member in connected
        entry: dict[str, Any] = {
            "id": member,
            "role": ("removed" if member == me and status.get("removed") else
                     "unreachable" if not reachable else
                     "leader" if member == leader else "follower"),
            "self": member == me,
            "connected": reachable,
            "reachable": reachable,
            "match_index": None,
            "lag": None,
            "page": pages.get(member),
            "vitals": None,
            "vitals_error": None,
            "vitals_proof": "own" if member == me else None,
            "vitals_at": None,
            "link_problem": None if reachable else _link_problem(node, member),
            "disk_problem": None,
        }
        if member == me:
            entry["match_index"] = status["log_last_index"]
            entry["lag"] = max(0, status["commit_index"] - status["last_applied"])
            entry["vitals"] = vitals
            entry["vitals_at"] = None if vitals is None else time.time()
            entry["disk_problem"] = journal_problem(status["disk"])
        else:
            if member in match:
                entry["match_index"] = match[member]
                entry["lag"] = max(0, status["log_last_index"] - match[member])
            seen = peers.get(member)
            if seen is not None:
                entry["vitals"] = seen.get("vitals")
                entry["vitals_error"] = seen.get("error")
                entry["vitals_at"] = seen.get("at")
                entry["vitals_proof"] = seen.get("proof")
                journal = (seen.get("vitals") or {}).get("journal")
                if isinstance(journal, dict) and not seen.get("error"):
                    entry["disk_problem"] = journal_problem(journal)
        members.append(entry)
    return members


def _removal(node: Node) -> dict[str, Any] | None:
    from .link_trouble import removal

    return removal(node)


def _link_problem(node: Node, member: str) -> str | None:
    from .link_trouble import explained, mesh_trouble, runs_again, said_stopping

    if said_stopping(node, member) and not runs_again(node, member):
        return STOPPED
    trouble = mesh_trouble(node, int(member)) if member.isdigit() else None
    return None if trouble is None else explained(trouble)


def plain(value: Any) -> Any:
    """Enums and other scalars as JSON types; dict keys as strings."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, enum.Enum):
        return value.value
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)
