"""What became of the pops of a :class:`~.cancelled_pops.CancellingConsumer` and of the
give-backs its ``on_orphan`` proposed (the properties :mod:`.cancelled_pops` describes)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .cancelled_pops import CancellingConsumer, DriverObserved
from .client import OK, Client
from .history import History, Violation

if TYPE_CHECKING:
    from .cluster import Cluster


def check_orphan_give_backs(history: History, client: CancellingConsumer, cluster: Cluster
                            ) -> dict[str, int]:
    """Every give-back an ``on_orphan`` proposed applied (returning ``None``), unless it
    failed without applying (then proposed again: a later entry), its member restarted
    since (a crash loses what it held) or its proposal failed with another error (the
    storage logs the loss). One answered otherwise (fenced off by the member
    session's floor: "duplicate", never applied) or never answered, its member still the
    same process, lost its elements unseen: a violation."""
    seen: dict[str, int] = {"applied": 0, "restarted": 0, "failed": 0, "retried": 0}
    for entry in client.orphan_give_backs:
        applied = history.results.get((entry.session, entry.seq))
        if applied is not None and applied.result is None:
            seen["applied"] += 1
            continue
        where = (f"{client.cid}: the give-back of {entry.values!r:.60} proposed by on_orphan "
                 f"on {entry.node} (member session {entry.session:x} seq {entry.seq})")
        if applied is not None:
            raise Violation(f"{where} applied at index {applied.index} returning "
                            f"{applied.result!r:.80}: its elements are lost")
        if entry.retried:  # failed without applying: a later entry is its next attempt
            seen["retried"] += 1
            continue
        if cluster.nodes[entry.node].incarnation != entry.incarnation:
            seen["restarted"] += 1
            continue
        if entry.transient:
            raise Violation(f"{where} failed without applying ({entry.error}) and was "
                            "never proposed again, its member still running: its "
                            "elements are lost")
        if entry.error:  # refused for what it is: logged, lost
            seen["failed"] += 1
            continue
        fenced = history.fenced.get((entry.session, entry.seq))
        outcome = (f"was answered {entry.result!r:.80}" if entry.answered
                   else "was never answered")
        raise Violation(f"{where} was never applied (first logged at index "
                        f"{fenced.index if fenced is not None else '-'}) and {outcome}: "
                        "its elements are lost unseen")
    return seen


def check_given_back(history: History, clients: Sequence[Client], cluster: Cluster) -> int:
    """Every pop applied for a :class:`CancellingConsumer` that took elements reached its
    caller or its ``on_orphan`` (module docstring), and every give-back its ``on_orphan``
    proposed applied (:func:`check_orphan_give_backs`); returns how many pops were
    checked."""
    checked = 0
    for client in clients:
        if not isinstance(client, CancellingConsumer):
            continue
        client.orphans_seen = check_orphan_give_backs(history, client, cluster)
        for obs in client.ops:
            applied = history.results.get((obs.session, obs.seq))
            if not isinstance(obs, DriverObserved) or applied is None:
                continue
            result = applied.result
            if not (isinstance(result, list) and result and result[0]):
                continue
            checked += 1
            if obs.outcome == OK or obs.has_orphan_result:
                continue
            if cluster.nodes[obs.node].incarnation != obs.incarnation:
                continue
            raise Violation(f"{client.cid}: pop (seq {obs.seq}) applied at index "
                            f"{applied.index} taking {result[0]!r:.60} ended {obs.outcome} "
                            f"({obs.result}) on {obs.node}: neither its caller nor its "
                            "on_orphan got the elements, lost")
    return checked
