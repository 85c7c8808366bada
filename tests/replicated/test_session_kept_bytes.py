"""The results client sessions keep are bounded in bytes, per session and in all, alike
on every replica and across snapshots; a retry of an op whose result is no longer kept
is answered so and never applied again."""

from __future__ import annotations

from itertools import count
from typing import Any

import pytest

from lazily_queue.core.queue import QueuePopError
from lazily_queue.core.work_masks import WorkTransition
from lazily_queue.raft import values
from lazily_queue.raft.batch import encode_command
from lazily_queue.raft.errors import ProposalRejected, ResultNotKept
from lazily_queue.replicated import ops, session_results
from lazily_queue.replicated import state_machine as sm_module
from lazily_queue.replicated.ops import OpError
from lazily_queue.replicated.results import encode_result
from lazily_queue.replicated.session_results import (
    KEPT_BYTES,
    NOT_KEPT,
    SESSION_KEPT_BYTES,
    kept_size,
)
from lazily_queue.replicated.state_machine import CLIENT_SESSION_BASE, StateMachine
from lazily_queue.storage.replicated_object import raise_op_error

CLIENT = CLIENT_SESSION_BASE + 77
BIG = b"x" * (512 * 1024)
_members = count(1)


def _apply(sm: StateMachine, *op_list: list[Any], stamp: int = 1_000) -> list[Any]:
    """``op_list`` as one entry of a member session whose floor passes them at once."""
    member = next(_members)
    batch = [[i + 1, *op] for i, op in enumerate(op_list)]
    result = sm.apply(encode_command(member, 0, batch), stamp)
    assert isinstance(result, list)
    sm.apply(encode_command(member, len(op_list) + 1, []), stamp)
    return result


def _client(seq: int, code: int, *args: Any, floor: int = 1,
            session: int = CLIENT) -> list[Any]:
    return [ops.CLIENT_OP, session, seq, floor, code, *args]


def _work_queue_of_one_big_item() -> StateMachine:
    sm = StateMachine()
    _apply(sm, [ops.WORK_DECLARE, "w", 30_000, 1_000_000], [ops.WORK_PUSH, "w", BIG])
    return sm


def _claim_and_nack(sm: StateMachine, seq: int, session: int = CLIENT) -> list[Any]:
    """Claim the item (its answer kept under ``seq``) and nack it under ``seq + 1``,
    the session's floor staying at 1: the claims' results are all still wanted."""
    [claimed] = _apply(sm, _client(seq, ops.WORK_CLAIM_MANY, "w", "a", 1, 0, session=session))
    assert isinstance(claimed, list) and claimed[0][0]["value"] == BIG, claimed
    [nacked] = _apply(sm, _client(seq + 1, ops.WORK_NACK, "w", "a",
                                  claimed[0][0]["delivery_id"], session=session))
    assert nacked[0] is True
    return claimed


def _snapshot_bytes(sm: StateMachine) -> int:
    return len(values.dumps(sm.capture()))


def test_a_session_claiming_a_big_item_again_and_again_keeps_its_bound() -> None:
    sm = _work_queue_of_one_big_item()
    claims = [_claim_and_nack(sm, seq) for seq in range(1, 200, 2)]  # 100 claims, 50 MiB
    session = sm.sessions[CLIENT]
    assert SESSION_KEPT_BYTES - len(BIG) < session.kept_bytes <= SESSION_KEPT_BYTES
    assert sm.kept.total == session.kept_bytes
    # the newest results are kept and answer their retries; nothing applies again
    attempts = sm.work_queues["w"].core.pending()[0].attempts
    [again] = _apply(sm, _client(199, ops.WORK_CLAIM_MANY, "w", "a", 1, 0))
    assert again == claims[-1]
    # the oldest were given up: a retry is answered that it applied, and applies nothing
    [first] = _apply(sm, _client(1, ops.WORK_CLAIM_MANY, "w", "a", 1, 0))
    assert first == NOT_KEPT and first.code == "duplicate"
    assert "no longer kept" in first.message
    assert sm.work_queues["w"].core.pending()[0].attempts == attempts
    assert not sm.work_queues["w"].core.in_flight()
    # the snapshot holds the queue's item and a bound's worth of results, not 50 MiB
    assert _snapshot_bytes(sm) < len(BIG) + SESSION_KEPT_BYTES + 64 * 1024


def test_a_result_too_large_to_keep_answers_its_first_attempt_and_its_retry_says_so(
) -> None:
    sm = StateMachine()
    wide = [i % 128 for i in range(250_000)]  # 250 kB as sent, 11 MB counted as held
    _apply(sm, [ops.QUEUE_DECLARE, "q", None], [ops.QUEUE_PUSH, "q", "first"],
           [ops.WORK_DECLARE, "w", 30_000, 1_000_000], [ops.WORK_PUSH, "w", wide],
           [ops.WORK_PUSH, "w", b"next"])
    assert _apply(sm, _client(1, ops.QUEUE_POP, "q")) == ["first"]
    [claimed] = _apply(sm, _client(2, ops.WORK_CLAIM_MANY, "w", "a", 9, 0))
    # over a session's bound: the first item goes alone, answered all the same
    assert [d["value"] for d in claimed[0]] == [wide]
    assert sm.sessions[CLIENT].done[2] == NOT_KEPT
    assert _apply(sm, _client(2, ops.WORK_CLAIM_MANY, "w", "a", 9, 0)) == [NOT_KEPT]
    _apply(sm, [ops.WORK_PUSH, "w", b"later"])
    assert _apply(sm, _client(2, ops.WORK_CLAIM_MANY, "w", "a", 9, 0)) == [NOT_KEPT]
    # the retries claimed nothing
    assert [item.value for item in sm.work_queues["w"].core.pending()] == [b"next", b"later"]
    # the result kept before stays kept, and a later small one is kept as before
    _apply(sm, [ops.QUEUE_PUSH, "q", "later"])
    assert _apply(sm, _client(1, ops.QUEUE_POP, "q")) == ["first"]
    assert _apply(sm, _client(3, ops.QUEUE_POP, "q")) == ["later"]
    assert _apply(sm, _client(3, ops.QUEUE_POP, "q")) == ["later"]
    assert sm.kept.total == sm.sessions[CLIENT].kept_bytes < 1024


def test_settle_many_of_many_unknown_ids_keeps_little() -> None:
    sm = StateMachine()
    _apply(sm, [ops.WORK_DECLARE, "w", 30_000, 2])
    ids = list(range(10**6, 10**6 + 200_000))  # a 1 MB op
    [(rows, _)] = _apply(sm, _client(1, ops.WORK_SETTLE_MANY, "w", "a", "acked", ids))
    assert len(rows) == len(ids) and rows[0] == [False, None, False]
    assert sm.kept.total <= SESSION_KEPT_BYTES // 2
    assert _snapshot_bytes(sm) < 64 * 1024
    [retried] = _apply(sm, _client(1, ops.WORK_SETTLE_MANY, "w", "a", "acked", ids))
    assert retried == NOT_KEPT


def test_all_sessions_together_keep_at_most_their_bound() -> None:
    sm = _work_queue_of_one_big_item()
    sessions = [CLIENT_SESSION_BASE + (1 << 46) * (i + 1) + 1 for i in range(20)]
    for sid in sessions:  # 20 sessions of 8 MiB each: 160 MiB wanted
        for seq in range(1, 36, 2):
            _claim_and_nack(sm, seq, session=sid)
        kept = [sm.sessions[s].kept_bytes for s in sessions if s in sm.sessions]
        assert sm.kept.total == sum(kept) <= KEPT_BYTES
        assert max(kept) <= SESSION_KEPT_BYTES
    assert sm.kept.total > KEPT_BYTES // 2
    # the last session to claim keeps its newest results
    newest = sm.sessions[sessions[-1]]
    assert newest.done[35] != NOT_KEPT
    assert _snapshot_bytes(sm) < KEPT_BYTES + 2 * len(BIG)


def test_results_forgotten_by_the_floor_or_with_their_session_free_their_bytes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    sm = _work_queue_of_one_big_item()
    for seq in range(1, 10, 2):
        _claim_and_nack(sm, seq)
    assert sm.kept.total > 4 * len(BIG)
    # the client's floor passes the claims: only the newest op's result is kept
    _apply(sm, _client(11, ops.QUEUE_DECLARE, "q", None, floor=11))
    assert sm.sessions[CLIENT].kept_bytes == sm.kept.total < 1024
    for seq in range(12, 22, 2):
        _claim_and_nack(sm, seq)
    # a session dropped for a new one, or not seen for its time, takes its bytes along
    monkeypatch.setattr(sm_module, "MAX_CLIENT_SESSIONS", 1)
    _apply(sm, _client(1, ops.QUEUE_DECLARE, "q", None, session=CLIENT + 1))
    assert CLIENT not in sm.sessions and sm.kept.total < 1024
    _claim_and_nack(sm, 2, session=CLIENT + 1)
    assert sm.kept.total > len(BIG)
    _apply(sm, [ops.QUEUE_DECLARE, "q", None], stamp=2_000 + sm_module.SESSION_TTL_MS)
    assert CLIENT + 1 not in sm.sessions
    assert sm.kept.total == sum(s.kept_bytes for s in sm.sessions.values()) < 1024


def test_a_restored_replica_counts_and_gives_up_results_as_the_others() -> None:
    sm = _work_queue_of_one_big_item()
    for seq in range(1, 20, 2):
        _claim_and_nack(sm, seq)
    _apply(sm, [ops.QUEUE_DECLARE, "q", None], [ops.QUEUE_PUSH, "q", "v"],
           _client(21, ops.QUEUE_POP_MANY, "q", 5), _client(22, ops.QUEUE_POP, "q"),
           *([ops.QUEUE_PUSH, "q", BIG] for _ in range(40)))
    restored = StateMachine()
    restored.restore(sm.capture())
    assert restored.kept.total == sm.kept.total
    assert restored.sessions[CLIENT].sizes == sm.sessions[CLIENT].sizes
    # the same entries on both: each gives up the same results
    pops = [encode_command(9, 0, [[seq, *_client(seq, ops.QUEUE_POP_MANY, "q", 1)]])
            for seq in range(23, 63)]
    for replica in (sm, restored):
        for entry in pops:
            assert replica.apply(entry, 2_000) == [[BIG]]
        assert replica.sessions[CLIENT].done[23] == NOT_KEPT
    assert restored.capture() == sm.capture()
    assert restored.sessions[CLIENT].sizes == sm.sessions[CLIENT].sizes
    assert restored.kept.total == sm.kept.total


def test_a_snapshot_keeping_more_than_the_bound_is_brought_within_it() -> None:
    sm = _work_queue_of_one_big_item()
    _claim_and_nack(sm, 1)
    doc = sm.capture()
    done = doc["sessions"][str(CLIENT)][2]
    # as an earlier version kept them: a result over the bound and 30 big ones
    done += [[100, encode_result([BIG] * 20)]]
    done += [[101 + i, encode_result([BIG])] for i in range(30)]
    restored = StateMachine()
    restored.restore(doc)
    session = restored.sessions[CLIENT]
    assert restored.kept.total == session.kept_bytes <= SESSION_KEPT_BYTES
    assert session.done[100] == NOT_KEPT and session.done[1] == NOT_KEPT
    assert session.done[130] == [BIG]


@pytest.mark.parametrize("result", [
    None, True, 7, -2**70, 1.5, "name", "naïve", b"\x00" * 10, [1, [2, (3, "x")]],
    {"delivery_id": 3, "value": b"v", "headers": {"k": "v"}}, (1, 2),
    OpError("bad_args", "why"), NOT_KEPT, [OpError("full", "q"), None],
    [1.5, {"a": [2.5, None, {"b": ("c", b"d")}], "e": -1}, QueuePopError.Empty],
    WorkTransition([{"delivery_id": 1, "value": "v"}], 3),
])
def test_a_results_size_is_the_same_after_a_snapshot(result: Any) -> None:
    sm = StateMachine()
    sm.kept.keep(sm.sessions, sm.open_client_session(CLIENT), 1, result)
    restored = StateMachine()
    restored.restore(sm.capture())
    assert restored.sessions[CLIENT].sizes == sm.sessions[CLIENT].sizes
    assert restored.kept.total == sm.kept.total == kept_size(result)


def test_not_kept_is_counted_as_nothing_and_the_constants_agree() -> None:
    assert kept_size(NOT_KEPT) == 0
    assert kept_size(OpError(NOT_KEPT.code, NOT_KEPT.message)) == 0
    assert session_results.KEPT_BYTES_AFTER_SHED < KEPT_BYTES
    assert 4 * 1024 * 1024 + 4096 < SESSION_KEPT_BYTES < KEPT_BYTES


def test_a_result_no_longer_kept_is_raised_as_its_own_error() -> None:
    with pytest.raises(ResultNotKept, match="no longer kept") as raised:
        raise_op_error(NOT_KEPT)
    assert isinstance(raised.value, ProposalRejected)
    assert raised.value.applied is True  # applied once, not again
    with pytest.raises(ResultNotKept, match="already applied"):
        raise_op_error(OpError("duplicate", "already applied"))
    with pytest.raises(ProposalRejected) as other:
        raise_op_error(OpError("full", "the queue is full"))
    assert not isinstance(other.value, ResultNotKept)
    assert other.value.applied is False
