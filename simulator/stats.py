"""The figures of one checked run (what the summary line totals)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .cancelled_pops import CancellingConsumer
from .forgotten_sessions import ForgettingClient
from .registered_sessions import RegisteringClient
from .session_client import SessionClient, SessionGroupMember, SessionProducer

if TYPE_CHECKING:
    from .checker import Checker
    from .simulation import Simulation


def checked_stats(sim: Simulation, checker: Checker) -> dict[str, Any]:
    """What the checked run did, by kind of case."""
    stats: dict[str, Any] = {}
    stats["ops"] = checker.ops
    stats["deduplicated"] = checker.deduplicated
    stats["fenced"] = len(sim.cluster.history.fenced)
    stats["once_repeats"] = (
        checker.once.repeats + checker.topic_options.repeats + checker.options.repeats
        + (checker.work.repeats if checker.work is not None else 0))
    stats["txn_committed"] = checker.txns.committed
    stats["txn_aborted"] = sum(checker.txns.aborted.values())
    stats["group_settled"] = checker.groups.settled()
    stats["group_client_acks"] = sum(
        cl.acked for cl in sim.clients if isinstance(cl, SessionGroupMember))
    stats["time_positions"] = checker.time_positions
    stats["headers_checked"] = checker.headers.checked
    if checker.work is not None and checker.work.delivered_late:
        stats["delivered_when_due"] = checker.work.delivered_late
    stats["ttl_expired"] = checker.expiry.expired
    stats["ttl_delivered"] = checker.expiry.delivered
    stats["work_ttl_expired"] = len(checker.work_expiry.expired)
    stats["work_ttl_delivered"] = checker.work_expiry.delivered
    stats["group_ttl_expired"] = len(checker.group_expiry.expired)
    stats["group_ttl_delivered"] = checker.group_expiry.delivered
    stats["options_delivered"] = checker.options.delivered
    stats["delayed_delivered"] = checker.options.delivered_delayed
    stats["topic_options_delivered"] = checker.topic_options.delivered
    stats["topic_options_expired"] = checker.topic_options.expired
    sessions = [cl for cl in sim.clients if isinstance(cl, SessionClient)]
    stats["client_ops"] = sim.cluster.history.client_ops
    stats["client_retries"] = sum(cl.retries for cl in sessions)
    stats["session_answers"] = sim.session_answers
    stats["consumer_retries"] = sum(
        cl.retries for cl in sessions if not isinstance(cl, SessionProducer))
    stats["kept"] = sim.kept
    stats["taken_large"], stats["no_room"] = sim.taken, sim.no_room
    cancelling = [cl for cl in sim.clients if isinstance(cl, CancellingConsumer)]
    stats["cancelled_ready"] = sum(cl.cancelled_ready for cl in cancelling)
    stats["cancelled_waiting"] = sum(cl.cancelled_waiting for cl in cancelling)
    stats["stepped_now"] = sum(cl.stepped_now for cl in cancelling)
    stats["met_cancelled"] = sum(cl.met_cancelled for cl in cancelling)
    stats["given_back"] = sum(cl.given_back for cl in cancelling)
    stats["given_back_checked"] = sim.given_back
    for key in ("applied", "restarted", "failed", "retried"):
        stats[f"orphan_give_backs_{key}"] = sum(cl.orphans_seen.get(key, 0) for cl in cancelling)
    stats["orphan_give_backs_unproposed"] = sum(cl.unproposed for cl in cancelling)
    for key, value in sim.give_backs.items():
        stats[f"giver_{key}"] = value
    for key, value in sim.doubles.items():
        stats[f"doubles_{key}"] = value
    stats["txn_due_applied"] = checker.txn_options.due_applied
    stats["txn_due_refused"] = checker.txn_options.due_refused
    stats["txn_ttl_applied"] = checker.txn_options.ttl_applied
    stats["sessions_ended"] = len(checker.ephemeral.ended)
    stats["reaps"] = checker.ephemeral.reaps
    stats["ephemeral_removed"] = checker.ephemeral.removed
    stats["takeovers"] = checker.ephemeral.takeovers
    stats["registered"] = checker.registered.registered
    stats["forgotten_refused"] = checker.registered.refused
    stats["late_retries"] = sum(cl.late_retries for cl in sim.clients
                                if isinstance(cl, RegisteringClient))
    forgetting = [cl for cl in sim.clients if isinstance(cl, ForgettingClient)]
    for key in ("forgotten", "sent_again", "failed_forgotten", "late_held", "waited",
                "stale_applied", "stale_not_applied"):
        stats[f"fs_{key}"] = sum(getattr(cl, key) for cl in forgetting)
    stats["sent_again"] = sum(cl.sent_again for cl in sim.clients
                              if isinstance(cl, RegisteringClient))
    return stats
