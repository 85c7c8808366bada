"""A transaction is its ops applied one by one, or nothing: the check agrees with apply.

For random states and random transactions, the replicated ``TXN`` is compared with the
same ops applied one at a time to a copy of the state machine: when every op succeeds
one by one the transaction commits with the same results and leaves the same state;
when one fails, the transaction aborts naming that op and leaves the state unchanged.
"""

from __future__ import annotations

from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from lazily_queue.core.queue import QueuePushError
from lazily_queue.raft.batch import encode_command
from lazily_queue.replicated import ops
from lazily_queue.replicated.ops import OpError
from lazily_queue.replicated.state_machine import StateMachine

_NAMES = ("q", "t", "w", "nope")


def _op() -> st.SearchStrategy[list[Any]]:
    value = st.integers(0, 5)
    msg_id = st.sampled_from(["m1", "m2"])
    worker = st.sampled_from(["a", "a", "b"])
    delivery = st.integers(0, 2)
    queue = st.sampled_from(["q", "q", "q", "nope"])
    work = st.sampled_from(["w", "w", "w", "nope"])
    return st.one_of(
        st.tuples(st.just(ops.QUEUE_PUSH), queue, value),
        st.tuples(st.just(ops.QUEUE_PUSH_ONCE), queue, msg_id, value),
        st.tuples(st.just(ops.TOPIC_PUBLISH), st.sampled_from(["t", "nope"]), value),
        st.tuples(st.just(ops.TOPIC_PUBLISH_ONCE), st.sampled_from(["t", "nope"]), msg_id,
                  value),
        st.tuples(st.just(ops.WORK_PUSH), work, value),
        st.tuples(st.just(ops.WORK_PUSH_ONCE), work, msg_id, value),
        *[st.tuples(st.sampled_from([ops.WORK_ACK, ops.WORK_NACK]), work, worker, delivery)]
        * 3,
    ).map(list)


def _setup() -> st.SearchStrategy[list[list[Any]]]:
    """Ops building a state: pushes, claims, settlements, a close, a reap."""
    return st.lists(st.one_of(
        _op(),
        st.tuples(st.just(ops.WORK_CLAIM), st.just("w"), st.sampled_from(["a", "b"]),
                  st.just(None)).map(list),
        st.just([ops.QUEUE_CLOSE, "q"]),
        st.just([ops.WORK_REAP, "w", 10**9]),
    ), max_size=12)


def _failed(result: Any) -> bool:
    return isinstance(result, (OpError, QueuePushError)) or (
        type(result) is list and len(result) == 4 and result[0] is False)


def _fresh(setup: list[list[Any]]) -> StateMachine:
    sm = StateMachine()
    declare = [[ops.QUEUE_DECLARE, "q", 3], [ops.TOPIC_DECLARE, "t"],
               [ops.WORK_DECLARE, "w", 30_000, 2],
               *([ops.WORK_PUSH, "w", i] for i in range(3)),
               [ops.WORK_CLAIM, "w", "a", None], [ops.WORK_CLAIM, "w", "a", None]]
    sm.apply(encode_command(1, 0, [[i + 1, *op] for i, op in enumerate(declare + setup)]),
             1_000)
    return sm


def _state(sm: StateMachine) -> dict[str, Any]:
    doc = sm.capture()
    doc.pop("sessions")
    doc.pop("now")  # the leader's stamp moves with any entry
    return doc


@settings(max_examples=300, deadline=None)
@given(setup=_setup(), txn=st.lists(_op(), max_size=6))
@example(setup=[], txn=[[ops.WORK_ACK, "w", "a", 0], [ops.WORK_NACK, "w", "a", 0]])
@example(setup=[[ops.QUEUE_PUSH, "q", 1]], txn=[[ops.QUEUE_PUSH, "q", 2]] * 3)
@example(setup=[[ops.QUEUE_CLOSE, "q"]], txn=[[ops.TOPIC_PUBLISH, "t", 1],
                                              [ops.QUEUE_PUSH_ONCE, "q", "m1", 1]])
@example(setup=[[ops.QUEUE_PUSH_ONCE, "q", "m1", 1], [ops.QUEUE_CLOSE, "q"]],
         txn=[[ops.QUEUE_PUSH_ONCE, "q", "m1", 1], [ops.WORK_PUSH_ONCE, "w", "m1", 2],
              [ops.WORK_PUSH_ONCE, "w", "m1", 3]])
def test_a_transaction_is_its_ops_one_by_one_or_nothing(
        setup: list[list[Any]], txn: list[list[Any]]) -> None:
    one_by_one = _fresh(setup)
    results = []
    failed_at = None
    for index, op in enumerate(txn):
        [result] = one_by_one.apply(encode_command(2, 0, [[index + 1, *op]]), 2_000)
        if _failed(result):
            failed_at = index
            break
        results.append(result)
    together = _fresh(setup)
    before = _state(together)
    [outcome] = together.apply(encode_command(3, 0, [[1, ops.TXN, *txn]]), 2_000)
    if failed_at is None:
        assert outcome == [True, results]
        assert _state(together) == _state(one_by_one)
    else:
        assert outcome[0] is False and outcome[1] == failed_at, (outcome, failed_at)
        assert _state(together) == before


def _local_cells(setup: list[list[Any]]) -> tuple[Any, Any, Any]:
    from lazily_queue import QueueCell, TopicCell, WorkQueueCell

    q: QueueCell[Any] = QueueCell(capacity=3)
    t: TopicCell[Any] = TopicCell()
    w = WorkQueueCell(visibility_timeout=30.0, max_deliveries=2)
    for i in range(3):
        w.try_push(i)
    w.try_claim("a", 0.0)
    w.try_claim("a", 0.0)
    for op in setup:
        if op[0] == ops.WORK_CLAIM:
            w.try_claim(op[2], 0.0)
        elif op[0] == ops.QUEUE_CLOSE:
            q.try_close()
        elif op[0] == ops.WORK_REAP:
            w.try_reap_expired(10**9)
        elif "nope" not in op:
            _local_one(q, t, w, op)
    return q, t, w


def _local_one(q: Any, t: Any, w: Any, op: list[Any]) -> bool:
    """Apply one op to the local cells; whether it succeeded."""
    import asyncio

    from lazily_queue import SettlementRejected

    code = op[0]
    if code in (ops.WORK_ACK, ops.WORK_NACK):
        try:
            (w.try_ack if code == ops.WORK_ACK else w.try_nack)(op[2], op[3])
        except SettlementRejected:
            return False
        return True
    if code == ops.QUEUE_PUSH:
        return q.try_push(op[2]) is None
    if code == ops.QUEUE_PUSH_ONCE:
        return asyncio.run(q.offer(op[3], msg_id=op[2])) is None
    if code == ops.TOPIC_PUBLISH:
        t.try_publish(op[2])
    elif code == ops.TOPIC_PUBLISH_ONCE:
        asyncio.run(t.publish(op[3], msg_id=op[2]))
    elif code == ops.WORK_PUSH:
        w.try_push(op[2])
    else:
        asyncio.run(w.push(op[3], msg_id=op[2]))
    return True


def _local_state(q: Any, t: Any, w: Any) -> Any:
    return q.storage.elements(), q.is_closed(), t.elements(), w.snapshot()


@settings(max_examples=200, deadline=None)
@given(setup=_setup(), txn=st.lists(_op().filter(lambda op: "nope" not in op), max_size=6))
@example(setup=[], txn=[[ops.WORK_ACK, "w", "a", 0], [ops.WORK_NACK, "w", "a", 0]])
@example(setup=[], txn=[[ops.WORK_ACK, "w", "a", 0], [ops.WORK_ACK, "w", "b", 0]])
@example(setup=[[ops.QUEUE_PUSH, "q", 1]], txn=[[ops.QUEUE_PUSH, "q", 2]] * 3)
def test_a_local_transaction_is_its_ops_one_by_one_or_nothing(
        setup: list[list[Any]], txn: list[list[Any]]) -> None:
    import asyncio

    from lazily_queue import TransactionAborted, transaction

    alone = _local_cells(setup)
    failed_at = next((i for i, op in enumerate(txn) if not _local_one(*alone, op)), None)
    q, t, w = together = _local_cells(setup)
    before = _local_state(*together)
    tx = transaction()
    if any(op[0] in (ops.WORK_ACK, ops.WORK_NACK) and op[3] == other[3]
           for i, op in enumerate(txn) for other in txn[:i]
           if other[0] in (ops.WORK_ACK, ops.WORK_NACK)):
        return  # one delivery settled twice: refused where added (tests/cells)
    for op in txn:
        code = op[0]
        if code in (ops.WORK_ACK, ops.WORK_NACK):
            (tx.ack if code == ops.WORK_ACK else tx.nack)(w, op[2], op[3])
        elif code in (ops.QUEUE_PUSH, ops.WORK_PUSH):
            tx.push(q if code == ops.QUEUE_PUSH else w, op[2])
        elif code in (ops.QUEUE_PUSH_ONCE, ops.WORK_PUSH_ONCE):
            tx.push(q if code == ops.QUEUE_PUSH_ONCE else w, op[3], msg_id=op[2])
        elif code == ops.TOPIC_PUBLISH:
            tx.publish(t, op[2])
        else:
            tx.publish(t, op[3], msg_id=op[2])
    try:
        asyncio.run(tx.commit())
    except TransactionAborted as exc:
        assert exc.index == failed_at
        assert _local_state(*together) == before
        return
    assert failed_at is None
    assert _local_state(*together) == _local_state(*alone)
