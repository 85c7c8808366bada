"""Work-queue operations: the local ``WorkQueueCore`` applied on every replica.

Work-queue time is the leader's stamp on the batch (milliseconds since the Unix epoch,
never decreasing), so ``claim``, ``reap`` and lease extension apply identically
everywhere. Settlements (ack / nack) leave a receipt; a settlement repeated by the same
worker (a retry after a failover, from a restarted process) is refused exactly as the
core refuses it, but carries the original receipt, which the worker API accepts as
proof that its settlement committed. Receipts are kept for the last
:data:`RECEIPTS_KEPT` settlements of each work queue (a repeat of an older one is
refused without a receipt), so a queue's receipts take a fixed amount of memory and
snapshot space however much work goes through it; all queues' together are bounded too,
the oldest settled dropped first (:mod:`.receipts`). A retry by the same member within
its operation's deadline does not need them: the session returns the recorded result.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..core.limited_work import LimitedWorkQueue
from ..core.limits import Limits
from ..core.scheduling import RetryPolicy
from ..core.snapshot import is_int
from ..core.work import (
    Delivery,
    Receipt,
    WorkQueueCore,
    WorkTransition,
    check_worker,
)
from ..core.work_items import DeadLetter, PendingItem, as_dicts
from ..errors import InvalidSnapshot, LimitExceeded, shown
from ..raft.snapshot_pieces import Later
from . import expiry, ops
from .events import WorkQueueChanged
from .family import Family, Handler, Section, checked_name
from .group_retake import retaken_core
from .ops import OpRefused
from .receipts import ReceiptLedger, ReceiptTable, restore_receipts
from .take_bytes import NO_ROOM, claim_budget, replayed_as

if TYPE_CHECKING:
    from .state_machine import StateMachine

#: Settlement receipts kept per work queue, the newest (about 420 kB of memory and 145 kB
#: of snapshot when full).
RECEIPTS_KEPT = 4096


class WorkState:
    """A replicated work queue: the core plus its recent receipts; ``group`` is
    ``(topic, group)`` for a consumer group's queue (:mod:`.groups`), else ``None``;
    ``mirrored_group``: a client's mirror of a group's queue (whose feeds replay as
    pushes to it, so its ``group`` stays ``None``); ``lineage``: the
    :attr:`~lazily_queue.core.topic.TopicCore.lineage` of the topic whose elements its
    run of retained values holds (:func:`shared_from`), else ``None``."""

    def __init__(self, core: WorkQueueCore) -> None:
        self.core = core
        self.table = ReceiptTable()
        #: Its receipts by delivery id, oldest settled first.
        self.receipts: ReceiptTable = self.table
        self.group: tuple[str, str] | None = None
        self.mirrored_group = False
        self.lineage: object | None = None
        #: While a snapshot is restored: the ids of a run retaken from a group listed
        #: item by item (:mod:`.group_retake`), whose deadlines may be the run's too.
        self.retaken: tuple[int, int] | None = None

    def remember(self, ledger: ReceiptLedger, delivery: Delivery, outcome: str, now: int
                 ) -> list[Any]:
        """Record the settlement in ``ledger``; returns its receipt (``Receipt.to_list``,
        a list of its own)."""
        receipt = [delivery.delivery_id, delivery.item_id, delivery.worker, outcome, now]
        ledger.keep(self.table, receipt, RECEIPTS_KEPT)
        return receipt

    def earlier(self, name: str, worker: str, delivery_id: int, outcome: str) -> Receipt | None:
        raw = self.receipts.get(delivery_id)
        if raw is None or raw[2] != worker or raw[3] != outcome:
            return None
        return Receipt(name, raw[0], raw[1], raw[2], raw[3], raw[4], duplicate=True)


def _work(sm: StateMachine, args: list[Any]) -> tuple[str, WorkState]:
    name = checked_name(args[0])
    state = sm.work_queues.get(name)
    if state is None:
        raise OpRefused("unknown_work_queue", f"work queue {shown(name)} has not been declared")
    return name, state


def _time(sm: StateMachine, value: Any) -> int:
    """The op's explicit time, or the leader's stamp when the op carries none. A time
    later than the stamp counts as the stamp: no proposer (a client among them) can
    claim delayed items early, lease or delay past the leader's clock, or reap leases
    that have not lapsed."""
    if value is None:
        return sm.now
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise OpRefused("bad_time", f"now must be a non-negative number, got {shown(value)}")
    return min(int(value), sm.now)


def _changed(sm: StateMachine, name: str, mask: int) -> None:
    if mask:
        sm.emit(WorkQueueChanged(name, mask))


def declared(sm: StateMachine, name: str, visibility_timeout: Any, max_deliveries: Any,
             retry: RetryPolicy | None = None, limits: Limits | None = None) -> None:
    """The one rule of every work-queue declaration (``WORK_DECLARE`` and the ops that
    add a retry policy or limits, or both): a new queue is made with the whole
    configuration; an existing one must have exactly it (a declaration without a retry
    policy or limits means none), else ``config_mismatch`` and nothing changes; a
    group's queue is ``name_taken``."""
    existing = sm.work_queues.get(name)
    if existing is not None:
        if existing.group is not None:
            raise OpRefused("name_taken", f"{shown(name)} is group {shown(existing.group[1])} "
                            "of topic "
                            f"{shown(existing.group[0])}; open it with topic.group()")
        core = existing.core
        have = core.limits if isinstance(core, LimitedWorkQueue) else None
        if (core.visibility_timeout, core.max_deliveries, core.retry, have) != (
                visibility_timeout, max_deliveries, retry, limits):
            raise OpRefused(
                "config_mismatch",
                f"work queue {shown(name)} exists with visibility_timeout="
                f"{core.visibility_timeout} ms, max_deliveries={core.max_deliveries}, "
                f"retry={core.retry} and {'no limits' if have is None else have.describe()},"
                f" not visibility_timeout={shown(visibility_timeout)} ms, max_deliveries="
                f"{shown(max_deliveries)}, retry={retry} and "
                f"{'no limits' if limits is None else limits.describe()}; open it with the "
                "same settings on every node, or delete it and declare it again")
        return
    try:
        sm.work_queues[name] = WorkState(
            WorkQueueCore(visibility_timeout, max_deliveries, retry=retry) if limits is None
            else LimitedWorkQueue(visibility_timeout, max_deliveries, limits=limits,
                                  retry=retry))
    except (TypeError, ValueError) as exc:
        raise OpRefused("bad_config", str(exc)) from None


def declare(sm: StateMachine, args: list[Any]) -> Any:
    """``[name, visibility_timeout_ms, max_deliveries]``: :func:`declared` without a
    retry policy or limits."""
    if len(args) != 3:
        raise OpRefused("bad_args", "work_declare is [name, visibility_timeout_ms, "
                        "max_deliveries]")
    declared(sm, checked_name(args[0]), args[1], args[2])
    return None


def _work_op(op: Callable[[WorkQueueCore, StateMachine, list[Any]], WorkTransition[Any]]
             ) -> Handler:
    """A handler running ``op(core, sm, args)`` on the named work queue; returns
    ``[result, mask]`` and emits the mask."""

    def apply(sm: StateMachine, args: list[Any]) -> Any:
        name, state = _work(sm, args)
        result, mask = op(state.core, sm, args)
        _changed(sm, name, mask)
        if isinstance(result, Delivery):
            result = _delivery(result)
        elif isinstance(result, list):
            result = [_delivery(d) for d in result]
        return [result, mask]

    return apply


def _claim(core: WorkQueueCore, sm: StateMachine, args: list[Any]) -> WorkTransition[Any]:
    """``[name, worker, now]``: a claim skipping expired items when the queue has rules."""
    now = _time(sm, args[2])
    if sm.expiry and (rules := expiry.of(sm, "work_queue", args[0])) is not None:
        return WorkTransition(*expiry.work_claim(sm, args[0], core, rules, args[1], now, None))
    return core.claim(args[1], now)


def _claim_many(core: WorkQueueCore, sm: StateMachine, args: list[Any]
                ) -> WorkTransition[Any]:
    """``[name, worker, n, now]``, as :func:`_claim`, within :func:`.claim_budget`."""
    now, fitting = _time(sm, args[3]), claim_budget(args[1], sm.take_room)
    if sm.expiry and (rules := expiry.of(sm, "work_queue", args[0])) is not None:
        if not is_int(args[2]) or args[2] < 1:
            raise ValueError(f"n must be an int >= 1, got {shown(args[2])}")
        check_worker(args[1])
        claimed = WorkTransition(*expiry.work_claim(sm, args[0], core, rules, args[1], now,
                                                    args[2], fitting))
    else:
        claimed = core.claim_many(args[1], now, args[2], fitting)
    if sm.take_room is not None and (fitting.short or claimed.result):  # a refused time
        replayed_as(args, *((3, -1) if fitting.short else (2, len(claimed.result))))
    if fitting.short:  # what it promoted or expired is told
        _changed(sm, args[0], claimed.mask)
        raise OpRefused(NO_ROOM.code, NO_ROOM.message)
    return claimed


def _push(core: WorkQueueCore, sm: StateMachine, args: list[Any]) -> WorkTransition[int]:
    """Push stamped with the batch's leader time."""
    return core.push(args[1], sm.now)


def _delivery(delivery: Delivery) -> dict[str, Any]:
    """A delivery as a claim answers it: the spec's shape plus its enqueue stamp."""
    return {**delivery.to_dict(), "enqueued": delivery.enqueued}


def push(sm: StateMachine, args: list[Any]) -> Any:
    name, state = _work(sm, args)
    if state.group is not None:
        raise OpRefused("group_push", f"{shown(name)} is group {shown(state.group[1])} of topic "
                        f"{shown(state.group[0])}, fed by the topic: publish to the topic")
    try:
        item_id, mask = state.core.push(args[1], sm.now)
    except LimitExceeded as exc:  # a work queue with limits refused it: nothing changed
        raise OpRefused("full", f"work queue {shown(name)}: {exc}") from None
    _changed(sm, name, mask)
    return [item_id, mask]


def _settle_one(sm: StateMachine, name: str, state: WorkState, worker: str, delivery_id: int,
                outcome: str, delay: int | None = None, now: int | None = None
                ) -> tuple[bool, int, list[Any] | None, bool]:
    """``(settled, mask, receipt, duplicate)`` of one ack or nack (a nack requeues after
    ``delay`` ms, else the queue's retry back-off, from the leader's stamp)."""
    core = state.core
    delivery = core.delivery(delivery_id)
    result, mask = core.ack(worker, delivery_id) if outcome == "acked" else core.nack(
        worker, delivery_id, now=sm.now if now is None else now, delay=delay
    )
    if result and delivery is not None:
        return True, mask, state.remember(sm.receipt_ledger, delivery, outcome, sm.now), False
    # The core's answer stays exactly the spec's (a repeated settlement is refused);
    # the earlier receipt rides along for workers retrying the same settlement.
    earlier = state.earlier(name, worker, delivery_id, outcome)
    return False, mask, None if earlier is None else earlier.to_list(), earlier is not None


def _settle(sm: StateMachine, args: list[Any], outcome: str, delay: int | None = None,
            now: int | None = None) -> Any:
    name, state = _work(sm, args)
    ok, mask, receipt, duplicate = _settle_one(sm, name, state, args[1], args[2], outcome,
                                               delay, now)
    _changed(sm, name, mask)
    return [ok, mask, receipt, duplicate]


def ack(sm: StateMachine, args: list[Any]) -> Any:
    return _settle(sm, args, "acked")


def nack(sm: StateMachine, args: list[Any]) -> Any:
    return _settle(sm, args, "nacked")


def settle_many(sm: StateMachine, args: list[Any]) -> Any:
    """``[name, worker, outcome, delivery_ids]``: each settled as one ack or nack would be,
    in order; returns ``[[[settled, receipt, duplicate], ...], mask]`` (the masks ORed)."""
    name, state = _work(sm, args)
    worker, outcome, ids = args[1], args[2], args[3]
    if outcome not in ("acked", "nacked"):
        raise OpRefused("bad_outcome", f"outcome must be 'acked' or 'nacked', got {shown(outcome)}")
    if not isinstance(ids, list) or not all(is_int(i) for i in ids):
        raise OpRefused("bad_ids", "delivery_ids must be a list of ints")
    try:
        check_worker(worker)
    except (TypeError, ValueError) as exc:
        raise OpRefused("bad_worker", str(exc)) from exc
    results: list[list[Any]] = []
    mask = 0
    for delivery_id in ids:
        ok, moved, receipt, duplicate = _settle_one(sm, name, state, worker, delivery_id,
                                                    outcome)
        mask |= moved
        results.append([ok, receipt, duplicate])
    _changed(sm, name, mask)
    return [results, mask]


def shared_from(sm: StateMachine, state: WorkState) -> int | None:
    """The least id from which a group's run of retained values is its topic's elements
    at the same offsets (the topic's base: those below it left the topic), or ``None``
    when its topic's log is no longer the one it took them from."""
    topic = sm.topics.get(state.group[0]) if state.group is not None else None
    if topic is None or state.lineage is None or topic.lineage is not state.lineage:
        return None
    return topic.base_offset()


def _capture(sm: StateMachine, records: Callable[[Sequence[Any]], Any] = as_dicts,
             receipts: Callable[[ReceiptTable], Any] = ReceiptTable.rows) -> dict[str, Any]:
    queues: dict[str, Any] = {}
    for name, s in sm.work_queues.items():
        shared = shared_from(sm, s)
        doc: dict[str, Any] = {"core": s.core.snapshot(records, run=True, shared_from=shared),
                               "receipts": receipts(s.table)}
        if s.group is not None:
            doc["group"] = list(s.group)
        if shared is not None:  # its run and stamps may be its topic's
            doc["topic_log"] = True
        elif s.group is not None:  # not its topic's: no run to retake (:mod:`.group_retake`)
            doc["topic_log"] = False
        queues[name] = doc
    return queues


def _capture_deferred(sm: StateMachine) -> dict[str, Any]:
    """:func:`_capture` with each queue's items, deliveries, dead letters and receipts
    made where the snapshot is encoded (from copies of their lists taken now)."""
    return _capture(sm, lambda records: Later(records, _as_dict), ReceiptTable.rows_later)


def _as_dict(record: PendingItem | Delivery | DeadLetter) -> dict[str, Any]:
    return record.to_dict()


def _restored(sm: StateMachine, raw: Any) -> WorkState:
    """A queue of the section: a group's run takes the values it left out from its
    topic (restored before), as the run of its declaration did."""
    group = raw.get("group")
    topic = sm.topics.get(str(group[0])) if group is not None else None
    if raw.get("topic_log") is True and topic is None:
        raise InvalidSnapshot("a work queue's run and stamps are left to a topic the "
                              "snapshot does not hold")
    core, retaken = retaken_core(topic, raw)  # an older form listing a group's items
    topic_log = raw.get("topic_log") is True or retaken is not None

    def run_values(lo: int, hi: int) -> list[Any]:
        if topic is None or not topic_log:
            raise InvalidSnapshot(f"the values of items {lo}..{hi - 1} are left to a topic "
                                  "the snapshot does not hold")
        return topic.elements_between(lo, hi)

    state = WorkState(WorkQueueCore.from_snapshot(core, run_values))
    state.lineage = topic.lineage if topic is not None and topic_log else None
    state.retaken = retaken
    return state


def _restore(sm: StateMachine, doc: Any) -> None:
    queues: dict[str, WorkState] = {}
    groups: dict[str, dict[str, str]] = {}
    for name, raw in (doc or {}).items():
        state = _restored(sm, raw)
        restore_receipts(state.table, raw["receipts"], RECEIPTS_KEPT)
        if raw.get("group") is not None:
            topic, group = (str(part) for part in raw["group"])
            state.group = (topic, group)
            groups.setdefault(topic, {})[group] = str(name)
        queues[str(name)] = state
    sm.work_queues = queues
    sm.groups = groups
    sm.receipt_ledger.rebuild(state.table for state in queues.values())


def _capture_stamps(sm: StateMachine) -> dict[str, Any] | None:
    """Each work queue's enqueue stamps; a group's last points, its topic's too while
    it holds its topic's log (:func:`shared_from`), are left to its topic's."""
    found: dict[str, Any] = {}
    for name, s in sm.work_queues.items():
        topic = (sm.topics.get(s.group[0])
                 if s.group is not None and shared_from(sm, s) is not None else None)
        found[name] = s.core.stamps(None if topic is None else topic.stamp_index())
    return found or None


def _restore_stamps(sm: StateMachine, doc: Any) -> None:
    """:func:`_capture_stamps` back, after the queues and topics (a snapshot without it
    leaves enqueue times unknown, 0)."""
    if doc is None:
        return
    if not isinstance(doc, dict):
        raise ValueError("snapshot section 'work_stamps' must map work queue names to "
                         "their enqueue stamps")
    for name, points in doc.items():
        state = sm.work_queues.get(name)
        if state is not None:
            topic = sm.topics.get(state.group[0]) if state.lineage is not None and (
                state.group is not None) else None
            state.core.load_stamps(points, None if topic is None else topic.stamp_index())


FAMILY = Family("work_queues", {
    ops.WORK_DECLARE: declare,
    ops.WORK_PUSH: push,
    ops.WORK_CLAIM: _work_op(_claim),
    ops.WORK_ACK: ack,
    ops.WORK_NACK: nack,
    ops.WORK_REAP: _work_op(lambda core, sm, a: core.reap_expired(_time(sm, a[1]))),
    ops.WORK_EXTEND: _work_op(lambda core, sm, a: core.extend_lease(a[1], a[2], _time(sm, a[3]))),
    ops.WORK_REDRIVE: _work_op(lambda core, sm, a: core.redrive(a[1])),
    ops.WORK_CLAIM_MANY: _work_op(_claim_many),
    ops.WORK_RELEASE: _work_op(lambda core, sm, a: core.release(a[1], a[2])),
    ops.WORK_SETTLE_MANY: settle_many,
}, (Section("work_queues", _capture, _restore, _capture_deferred),
    Section("work_stamps", _capture_stamps, _restore_stamps)))
