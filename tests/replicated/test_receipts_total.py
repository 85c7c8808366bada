"""Settlement receipts are bounded in all, across work queues and consumer groups: past
the bound the oldest settled of any queue goes first, alike on every replica, restored
from a snapshot or not; a repeat of a settlement whose receipt went is refused without
one, as past the per-queue bound."""

from __future__ import annotations

from typing import Any

import cbor2

from lazily_queue.raft.snapshot import MAX_SNAPSHOT_BYTES
from lazily_queue.raft.snapshot_format import encode_snapshot
from lazily_queue.replicated import ops
from lazily_queue.replicated.receipts import RECEIPTS_TOTAL
from lazily_queue.replicated.state_machine import StateMachine
from lazily_queue.replicated.work_queues import RECEIPTS_KEPT

from .test_bounded_state import Proposer

LIMIT = 100


def _machine(limit: int = LIMIT) -> StateMachine:
    sm = StateMachine()
    sm.receipt_ledger.limit = limit
    return sm


def _settle(proposer: Proposer, name: str, count: int, outcome: int = ops.WORK_ACK,
            stamp: int | None = None) -> list[tuple[str, int]]:
    """Push, claim and settle ``count`` items of work queue ``name`` in one batch each:
    ``(name, delivery id)`` of each, in settlement order."""
    proposer.apply(*([[ops.WORK_PUSH, name, b"x"]] * count), stamp=stamp)
    claims = proposer.apply(*([[ops.WORK_CLAIM, name, "worker", None]] * count), stamp=stamp)
    ids = [delivery["delivery_id"] for delivery, _mask in claims]
    assert all(ok for ok, *_ in proposer.apply(*[[outcome, name, "worker", d] for d in ids],
                                                stamp=stamp))
    return [(name, d) for d in ids]


def _kept(sm: StateMachine) -> set[tuple[str, int]]:
    return {(name, d) for name, state in sm.work_queues.items() for d in state.receipts}


def _restored(sm: StateMachine, doc: Any = None) -> StateMachine:
    copy = _machine(sm.receipt_ledger.limit)
    copy.restore(cbor2.loads(cbor2.dumps(sm.capture() if doc is None else doc)))
    return copy


def _busy(sm: StateMachine, one_stamp: bool = False
          ) -> tuple[Proposer, list[tuple[str, int]]]:
    """Three work queues and a consumer group settling in interleaved runs (with
    ``one_stamp``, all at one leader stamp); every settlement in order."""
    proposer = Proposer(sm)
    if one_stamp:
        proposer.apply = _at(proposer.apply, proposer.stamp)  # type: ignore[method-assign]
    for name in ("a", "b", "c"):
        proposer.apply([ops.WORK_DECLARE, name, 30_000, 3])
    proposer.apply([ops.GROUP_DECLARE, "t", "g", 30_000, 3, 0])
    settled: list[tuple[str, int]] = []
    for size in (7, 30, 3, 41, 12):
        for name in ("a", "b", "c"):
            settled += _settle(proposer, name, size, ops.WORK_ACK if size % 2 else
                               ops.WORK_NACK)
        for _ in range(size):
            proposer.apply([ops.TOPIC_PUBLISH, "t", b"e"])
        settled += _settle_group(proposer, size)
    return proposer, settled


def _at(apply: Any, stamp: int) -> Any:
    return lambda *op_list, **_: apply(*op_list, stamp=stamp)


def _settle_group(proposer: Proposer, count: int) -> list[tuple[str, int]]:
    claims = proposer.apply(*([[ops.WORK_CLAIM, "t:g", "worker", None]] * count))
    ids = [delivery["delivery_id"] for delivery, _mask in claims]
    assert all(ok for ok, *_ in proposer.apply(*[[ops.WORK_ACK, "t:g", "worker", d]
                                                   for d in ids]))
    return [("t:g", d) for d in ids]


def test_the_receipts_of_all_queues_and_groups_stay_within_the_bound_newest_kept() -> None:
    sm = _machine()
    _, settled = _busy(sm)
    assert len(settled) > 3 * LIMIT
    assert _kept(sm) == set(settled[-LIMIT:])
    assert sm.receipt_ledger.total == LIMIT


def test_the_per_queue_bound_still_holds_under_the_total() -> None:
    sm = _machine(limit=3 * RECEIPTS_KEPT)
    proposer = Proposer(sm)
    proposer.apply([ops.WORK_DECLARE, "a", 30_000, 3])
    settled: list[tuple[str, int]] = []
    for _ in range(2 * RECEIPTS_KEPT // 512):
        settled += _settle(proposer, "a", 512)
    assert _kept(sm) == set(settled[-RECEIPTS_KEPT:])
    assert sm.receipt_ledger.total == RECEIPTS_KEPT


def test_a_restored_replica_drops_the_same_receipts_as_a_live_one() -> None:
    sm = _machine()
    proposer, _ = _busy(sm, one_stamp=True)
    copy = _restored(sm)
    assert copy.capture() == sm.capture()
    for replica in (sm, copy):
        more = Proposer(replica, seq=proposer.seq)
        more.stamp = replica.now
        later = _settle(more, "b", 5) + _settle(more, "a", 9)
        assert set(later) <= _kept(replica) and replica.receipt_ledger.total == LIMIT
    assert _kept(sm) == _kept(copy)
    assert copy.capture() == sm.capture()
    # And the order itself: settling the bound over again drops the same ones in turn.
    both = [Proposer(replica, seq=proposer.seq + 100) for replica in (sm, copy)]
    at = sm.now + 100
    for _ in range(LIMIT // 10 - 1):
        for more in both:
            _settle(more, "c", 10, stamp=at)
        assert _kept(copy) == _kept(sm)
    assert copy.capture() == sm.capture()


def test_a_repeat_of_a_settlement_whose_receipt_went_is_refused_without_one() -> None:
    sm = _machine()
    _, settled = _busy(sm)
    kept = settled[-LIMIT]
    gone = settled[-LIMIT - 1]
    assert kept[0] != gone[0] or kept[1] != gone[1]
    answers = []
    for replica in (sm, _restored(sm)):
        retry = Proposer(replica, session=99)  # a restarted worker: a new session
        answers.append(retry.apply([ops.WORK_ACK, gone[0], "worker", gone[1]],
                                   [ops.WORK_NACK, gone[0], "worker", gone[1]],
                                   [ops.WORK_ACK, "a", "worker", 10**6]))
    assert answers[0] == answers[1]
    for ok, mask, receipt, duplicate in answers[0]:  # as an unknown id: refused, no change
        assert (ok, mask, receipt, duplicate) == (False, 0, None, False)
    retry = Proposer(sm, session=98)
    kept_outcome = ops.WORK_ACK if any(
        r[3] == "acked" for r in sm.work_queues[kept[0]].receipts.values()
        if r[0] == kept[1]) else ops.WORK_NACK
    ok, _, receipt, duplicate = retry.apply([kept_outcome, kept[0], "worker", kept[1]])[0]
    assert (ok, duplicate) == (False, True) and receipt[0] == kept[1]


def test_deleted_queues_and_groups_no_longer_count() -> None:
    sm = _machine()
    proposer, _ = _busy(sm)
    proposer.apply([ops.WORK_DELETE, "c"], [ops.TOPIC_DELETE, "t"])
    left = _kept(sm)
    assert sm.receipt_ledger.total == len(left) < LIMIT
    fresh = _settle(proposer, "a", LIMIT - len(left))
    assert _kept(sm) == left | set(fresh)  # room for as many again, none dropped
    assert _restored(sm).capture() == sm.capture()


def test_an_older_snapshot_over_the_bound_keeps_the_newest_by_stamp_then_queue() -> None:
    sm = _machine(limit=10 * LIMIT)
    _busy(sm, one_stamp=True)
    doc = cbor2.loads(cbor2.dumps(sm.capture()))
    newest = sorted(((r[4], position, index), (name, r[0]))
                    for position, (name, entry) in enumerate(doc["work_queues"].items())
                    for index, r in enumerate(entry["receipts"]))
    copy = _machine()
    copy.restore(doc)
    assert _kept(copy) == {key for _, key in newest[-LIMIT:]}
    assert _restored(copy).capture() == copy.capture()


def test_the_bound_keeps_the_receipts_far_below_the_snapshot_limit() -> None:
    sm = _machine(limit=2 * RECEIPTS_KEPT)
    proposer = Proposer(sm)
    for name in ("a", "b", "c", "d"):
        proposer.apply([ops.WORK_DECLARE, name, 30_000, 3])
        for _ in range(RECEIPTS_KEPT // 512):
            _settle(proposer, name, 512)
    size = len(encode_snapshot({"state": sm.capture(), "last": [b"", 0, 0],
                                "prev": [b"", 0, 0], "members": []}))
    assert sm.receipt_ledger.total == 2 * RECEIPTS_KEPT
    per_receipt = size / (2 * RECEIPTS_KEPT)
    assert RECEIPTS_TOTAL * per_receipt < MAX_SNAPSHOT_BYTES / 8


def _old_form(sm: StateMachine) -> Any:
    return cbor2.loads(cbor2.dumps(sm.capture()))


def test_members_upgraded_from_snapshots_at_different_entries_keep_the_same() -> None:
    """One member restored a snapshot taken before a batch settling ``b`` then ``a`` at
    one stamp and applied it; another restored a snapshot taken after it."""
    origin = _machine(limit=4)
    proposer = Proposer(origin)
    proposer.apply([ops.WORK_DECLARE, "a", 30_000, 3], [ops.WORK_DECLARE, "b", 30_000, 3])
    proposer.apply([ops.WORK_PUSH, "a", 1], [ops.WORK_PUSH, "b", 1])
    proposer.apply([ops.WORK_CLAIM, "a", "w", None], [ops.WORK_CLAIM, "b", "w", None])
    before, seq, stamp = _old_form(origin), proposer.seq, proposer.stamp
    batch = [[ops.WORK_ACK, "b", "w", 0], [ops.WORK_ACK, "a", "w", 0]]
    proposer.apply(*batch)
    early, late = _machine(limit=4), _machine(limit=4)
    early.restore(before)
    replay = Proposer(early, seq=seq)
    replay.stamp = stamp
    replay.apply(*batch)
    late.restore(_old_form(origin))
    for replica in (early, late):  # three more settlements: the bound reaches the batch
        more = Proposer(replica, seq=proposer.seq)
        more.stamp = proposer.stamp
        more.apply([ops.WORK_DECLARE, "c", 30_000, 3])
        _settle(more, "c", 3)
    assert _kept(early) == _kept(late) and len(_kept(late)) == 4
    assert early.capture() == late.capture()
