"""WORK_SETTLE_MANY: several settlements in one op, each as its single ack or nack would
be, refused whole (nothing applied) when its arguments are malformed."""

from __future__ import annotations

from typing import Any

from lazily_queue.raft.batch import encode_command
from lazily_queue.replicated import ops
from lazily_queue.replicated.ops import OpError
from lazily_queue.replicated.state_machine import StateMachine


class Session:
    def __init__(self, sm: StateMachine) -> None:
        self.sm = sm
        self.seq = 0

    def apply(self, *op_list: list[Any]) -> list[Any]:
        first = self.seq + 1
        self.seq += len(op_list)
        batch = [[first + i, *op] for i, op in enumerate(op_list)]
        result = self.sm.apply(encode_command(3, first, batch), 1_000 + self.seq)
        assert isinstance(result, list)
        return result


def _claimed(count: int) -> tuple[StateMachine, Session, list[int]]:
    sm = StateMachine()
    s = Session(sm)
    s.apply([ops.WORK_DECLARE, "w", 30_000, 2],
            *([ops.WORK_PUSH, "w", f"v{i}"] for i in range(count)))
    (claimed, _), = s.apply([ops.WORK_CLAIM_MANY, "w", "a", count, None])
    return sm, s, [d["delivery_id"] for d in claimed]


def test_each_id_is_settled_in_order_with_its_receipt_and_refusals_are_per_id() -> None:
    sm, s, ids = _claimed(3)
    (rows, mask), = s.apply([ops.WORK_SETTLE_MANY, "w", "a", "acked", [ids[0], 99, ids[1]]])
    assert [row[0] for row in rows] == [True, False, True]
    assert rows[1] == [False, None, False]
    assert [row[1][0] for row in (rows[0], rows[2])] == [ids[0], ids[1]]
    assert rows[0][1][2:4] == ["a", "acked"] and mask
    core = sm.work_queues["w"].core
    assert [d.delivery_id for d in core.in_flight()] == [ids[2]]
    # A repeat by the same worker is refused but carries the first receipt.
    (again, _), = s.apply([ops.WORK_SETTLE_MANY, "w", "a", "acked", [ids[0]]])
    assert again == [[False, rows[0][1], True]]
    # Another worker's delivery is refused; a nack requeues.
    (other, _), = s.apply([ops.WORK_SETTLE_MANY, "w", "b", "nacked", [ids[2]]])
    assert other == [[False, None, False]]
    (nacked, _), = s.apply([ops.WORK_SETTLE_MANY, "w", "a", "nacked", [ids[2]]])
    assert nacked[0][0] is True and [p.value for p in core.pending()] == ["v2"]


def test_malformed_arguments_refuse_the_whole_op_and_change_nothing() -> None:
    sm, s, ids = _claimed(2)
    before = sm.capture()
    bad = [
        [ops.WORK_SETTLE_MANY, "w", "a", "acked", [ids[0], "x"]],
        [ops.WORK_SETTLE_MANY, "w", "a", "acked", ids[0]],
        [ops.WORK_SETTLE_MANY, "w", "a", "done", ids],
        [ops.WORK_SETTLE_MANY, "w", 7, "acked", ids],
        [ops.WORK_SETTLE_MANY, "nope", "a", "acked", ids],
    ]
    for op in bad:
        (result,) = s.apply(op)
        assert isinstance(result, OpError), op
    after = sm.capture()
    assert after["work_queues"] == before["work_queues"]
