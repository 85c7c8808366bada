"""Rich tables for a node status document (see :func:`lazily_queue.status.node_status`)."""

from __future__ import annotations

from typing import Any

from rich.table import Table


def _dash(value: Any) -> str:
    return "-" if value is None else str(value)


def render(status: dict[str, Any]) -> list[Table]:
    """The cluster table, the members table and one table per non-empty queue family."""
    cluster = Table(title=f"node {status['node']} of cluster {status['cluster']!r}")
    for column in ("state", "leader", "term", "commit index", "applied index", "quorum",
                   "durability"):
        cluster.add_column(column)
    cluster.add_row(status["state"], _dash(status["leader"]), str(status["term"]),
                    str(status["commit_index"]), str(status["last_applied"]),
                    "yes" if status["has_quorum"] else "NO", status["durability"])
    members = Table(title="members (match index and lag are known on the leader)")
    for column in ("id", "role", "link", "match index", "lag"):
        members.add_column(column, justify="right" if column in ("match index", "lag") else "left")
    for m in status["members"]:
        name = m["id"] + (" (this node)" if m["self"] else "")
        members.add_row(name, m["role"], "up" if m["connected"] else "DOWN",
                        _dash(m["match_index"]), _dash(m["lag"]))
    tables = [cluster, members]
    if status["work_queues"]:
        work = Table(title="work queues")
        for column in ("name", "pending (lag)", "in flight", "dead letters", "workers"):
            work.add_column(column, justify="left" if column in ("name", "workers") else "right")
        for name, w in status["work_queues"].items():
            workers = ", ".join(f"{k}: {v}" for k, v in w["workers"].items())
            work.add_row(name, str(w["pending"]), str(w["in_flight"]), str(w["dead_letters"]),
                         workers or "-")
        tables.append(work)
    if status["queues"]:
        queues = Table(title="queues")
        for column in ("name", "depth", "capacity", "closed"):
            queues.add_column(column)
        for name, q in status["queues"].items():
            closed = "yes" if q["closed"] else "no"
            queues.add_row(name, str(q["len"]), _dash(q["capacity"]), closed)
        tables.append(queues)
    if status["topics"]:
        topics = Table(title="topics")
        for column in ("name", "retained", "end offset", "subscribers (lag)"):
            topics.add_column(column)
        for name, t in status["topics"].items():
            subs = ", ".join(f"{k} ({v['lag']})" for k, v in t["subscribers"].items())
            topics.add_row(name, str(t["retained"]), str(t["end_offset"]), subs or "-")
        tables.append(topics)
    return tables
