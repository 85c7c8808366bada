"""What the replicated state keeps per consumed message stays bounded under sustained
load, and the bounds apply alike on every replica, restored from a snapshot or not."""

from __future__ import annotations

from typing import Any

import cbor2

from lazily_queue.raft.batch import encode_command
from lazily_queue.replicated import ops
from lazily_queue.replicated.state_machine import SESSION_TTL_MS, StateMachine
from lazily_queue.replicated.work_queues import RECEIPTS_KEPT


class Proposer:
    """One session proposing batches in order, its floor just past its last batch."""

    def __init__(self, sm: StateMachine, session: int = 7, seq: int = 0) -> None:
        self.sm = sm
        self.session = session
        self.seq = seq
        self.stamp = 1_000

    def apply(self, *op_list: list[Any], stamp: int | None = None) -> list[Any]:
        first = self.seq + 1
        batch = [[first + i, *op] for i, op in enumerate(op_list)]
        self.seq += len(op_list)
        self.stamp = self.stamp + 1 if stamp is None else stamp
        result = self.sm.apply(encode_command(self.session, first, batch), self.stamp)
        assert isinstance(result, list)
        return result


def _work_through(proposer: Proposer, count: int, per_batch: int = 50) -> list[int]:
    """Push, claim and ack ``count`` items; the delivery ids, in settlement order."""
    settled: list[int] = []
    for _ in range(count // per_batch):
        proposer.apply(*([[ops.WORK_PUSH, "w", b"x" * 100]] * per_batch))
        claims = proposer.apply(*([[ops.WORK_CLAIM, "w", "worker", None]] * per_batch))
        ids = [delivery["delivery_id"] for delivery, _mask in claims]
        acks = [[ops.WORK_ACK, "w", "worker", did] for did in ids]
        assert all(ok for ok, *_ in proposer.apply(*acks))
        settled += ids
    return settled


def _declared(session: int = 7) -> tuple[StateMachine, Proposer]:
    sm = StateMachine()
    proposer = Proposer(sm, session)
    proposer.apply([ops.WORK_DECLARE, "w", 30_000, 3])
    return sm, proposer


def _restored(sm: StateMachine) -> StateMachine:
    copy = StateMachine()
    copy.restore(cbor2.loads(cbor2.dumps(sm.capture())))
    return copy


def test_a_busy_work_queues_receipts_take_a_fixed_snapshot_space() -> None:
    sm, proposer = _declared()
    _work_through(proposer, 20_000)
    state = sm.work_queues["w"]
    assert len(state.receipts) == RECEIPTS_KEPT
    size = len(cbor2.dumps(sm.capture()))
    assert size <= 256 * 1024  # 20,000 receipts would take about 700 kB
    _work_through(proposer, 2 * RECEIPTS_KEPT)
    # Only wider ids (CBOR integers past 65535) make it larger.
    assert len(cbor2.dumps(sm.capture())) <= size * 1.1


def test_a_repeat_within_the_window_gets_its_receipt_on_every_replica() -> None:
    sm, proposer = _declared()
    settled = _work_through(proposer, 3 * RECEIPTS_KEPT)
    kept, dropped = settled[-RECEIPTS_KEPT], settled[-RECEIPTS_KEPT - 1]
    replicas = [sm, _restored(sm)]
    answers = []
    for replica in replicas:
        retry = Proposer(replica, session=99)  # a restarted worker: a new session
        answers.append(retry.apply([ops.WORK_ACK, "w", "worker", kept],
                                   [ops.WORK_ACK, "w", "worker", dropped],
                                   [ops.WORK_NACK, "w", "worker", kept]))
    assert answers[0] == answers[1]
    (ok, _, receipt, duplicate), (old_ok, _, old_receipt, old_duplicate), other = answers[0]
    assert (ok, duplicate) == (False, True) and receipt[0] == kept and receipt[3] == "acked"
    assert (old_ok, old_receipt, old_duplicate) == (False, None, False)
    assert other[2:] == [None, False]  # another outcome is no repeat
    assert replicas[0].capture() == replicas[1].capture()


def test_a_snapshot_holding_more_receipts_than_the_window_is_cut_to_the_newest() -> None:
    sm, proposer = _declared()
    settled = _work_through(proposer, RECEIPTS_KEPT, per_batch=64)
    doc = cbor2.loads(cbor2.dumps(sm.capture()))
    receipts = doc["work_queues"]["w"]["receipts"]
    extra = [[-i, -i, "worker", "acked", 1] for i in range(1, 101)]  # older settlements
    doc["work_queues"]["w"]["receipts"] = extra[::-1] + receipts
    copy = StateMachine()
    copy.restore(doc)
    assert list(copy.work_queues["w"].receipts) == settled
    assert copy.capture() == sm.capture()


def test_a_session_keeps_no_results_below_its_floor() -> None:
    sm, proposer = _declared()
    _work_through(proposer, 2_000)
    session = sm.sessions[proposer.session]
    assert len(session.done) <= 50  # only the last batch, at or above the floor


def test_idle_sessions_expire_alike_on_a_replica_restored_from_a_snapshot() -> None:
    sm, busy = _declared(session=1)
    idle = Proposer(sm, session=2)
    idle.apply([ops.WORK_PUSH, "w", "once"])
    for _ in range(1000):
        busy.apply([ops.WORK_PUSH, "w", "x"])
    copy = _restored(sm)
    assert copy.capture() == sm.capture()
    later = busy.stamp + SESSION_TTL_MS + 1
    answers = []
    for replica in (sm, copy):
        # The same batches on both: the busy session outlives the idle one's TTL ...
        still = Proposer(replica, session=1, seq=busy.seq)
        for i in range(30):
            still.apply([ops.WORK_PUSH, "w", "y"], stamp=later + i)
        # ... and the idle session's first push arrives again (a late duplicate).
        again = Proposer(replica, session=2)
        answers.append(again.apply([ops.WORK_PUSH, "w", "once"], stamp=later + 50))
    assert answers[0] == answers[1]
    assert sm.capture() == copy.capture()
    assert list(sm.sessions) == list(copy.sessions)


def test_sessions_not_seen_for_their_ttl_are_forgotten() -> None:
    sm, busy = _declared(session=1)
    for sid in range(2, 12):
        Proposer(sm, session=sid).apply([ops.WORK_PUSH, "w", sid], stamp=2_000)
    assert len(sm.sessions) == 11
    busy.apply([ops.WORK_PUSH, "w", "later"], stamp=2_000 + SESSION_TTL_MS + 1)
    assert list(sm.sessions) == [1]
