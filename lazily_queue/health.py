"""A node's health as its status says it (:func:`health`): ``ok``, ``warning`` or
``critical``, with the reasons."""

from __future__ import annotations

import contextlib
import time
from typing import Any

from .vitals import journal_problem

#: A member this many entries behind the leader makes the cluster ``warning``.
LAG_WARNING = 1000
#: Term changes within this many seconds count as recent.
RECENT_TERMS = 300.0


#: Why a leader whose journal cannot be written may no longer lead.
STALE_LEADER = ("this member may no longer lead: while its journal is not writable it drops "
                "the Raft messages it receives, so the others may have elected another "
                "leader (they name it)")


def _said_by(member: dict[str, Any]) -> str:
    """Who says a member's disk problem: its proven vitals, or only its page."""
    if member.get("vitals_proof") == "proven":
        return "its vitals say so"
    return "its page says so, unproven: the cluster has no secret"


def health(status: dict[str, Any], term_changes: list[dict[str, Any]]) -> dict[str, Any]:
    """The cluster's health as this node sees it: ``level`` is ``"ok"``, ``"warning"``
    (a member lagging by :data:`LAG_WARNING` entries or more, or a term change in the
    last :data:`RECENT_TERMS` seconds) or ``"critical"`` (a member unreachable, no
    quorum, no leader, this node's journal not writable, and then, on a leader,
    :data:`STALE_LEADER`, or the leader's snapshot it needs not stored; another member's
    when its vitals say so), with the reasons."""
    members = status["members"]
    up = sum(1 for m in members if m["reachable"])
    recent = [c for c in term_changes if c["time"] >= time.time() - RECENT_TERMS]
    critical, warning = [], []
    removed = status.get("removed")
    if removed:
        critical.append(removed_reason(removed))
    down = [m["id"] for m in members if not m["reachable"]]
    if down:
        critical.append(f"member(s) {', '.join(down)} unreachable")
        critical.extend(f"member {m['id']}: {m['link_problem']}" for m in members
                        if not m["reachable"] and m.get("link_problem"))
    if not status["has_quorum"]:
        critical.append("no quorum: writes are refused")
    if status["leader"] is None:
        critical.append("no leader")
    problem = journal_problem(status["disk"])
    if problem is not None:
        critical.append(problem)
    if not status["disk"]["writable"] and status.get("state") == "leader":
        critical.append(STALE_LEADER)
    critical.extend(f"member {m['id']}: {m['disk_problem']} ({_said_by(m)})"
                    for m in members if not m.get("self") and m.get("disk_problem"))
    lagging = [m["id"] for m in members if (m["lag"] or 0) >= LAG_WARNING]
    if lagging:
        warning.append(f"member(s) {', '.join(lagging)} lagging")
    if recent:
        warning.append(f"{len(recent)} term change(s) in the last {RECENT_TERMS / 60:g} min")
    return {
        "level": "critical" if critical else "warning" if warning else "ok",
        "reasons": critical + warning,
        "members_up": up,
        "members_total": len(members),
        "quorum": bool(status["has_quorum"]),
        "leader": status["leader"],
        "term": status["term"],
        "recent_term_changes": recent,
    }


def removed_reason(removed: dict[str, Any]) -> str:
    """The health reason of a node the other members refuse as removed (a status's
    ``removed``, as read from JSON: a field of another shape is left out)."""
    since, by, fix = removed.get("since"), removed.get("refused_by"), removed.get("fix")
    when = ""
    if isinstance(since, int | float) and not isinstance(since, bool):
        with contextlib.suppress(ValueError, OverflowError, OSError):  # NaN, out of range
            when = time.strftime(" since %Y-%m-%d %H:%M:%S UTC", time.gmtime(since))
    members = ", ".join(map(str, by)) if isinstance(by, list) else "the others"
    return (f"this node was removed from the cluster: member(s) {members} refuse it as not "
            f"a member{when}" + (f": {fix}" if isinstance(fix, str) else ""))
