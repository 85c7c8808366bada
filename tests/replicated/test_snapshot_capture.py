"""A snapshot file's capture: on the loop only containers are copied; the records of
work queues and the results kept for client sessions are made where the snapshot is
encoded (the writer's thread), from those copies, as they were when captured."""

from __future__ import annotations

from typing import Any

import pytest

from lazily_queue.core.work_items import DeadLetter, Delivery, PendingItem
from lazily_queue.raft.batch import encode_command
from lazily_queue.raft.snapshot import encode_snapshot
from lazily_queue.raft.snapshot_pieces import Later
from lazily_queue.replicated import ops
from lazily_queue.replicated.client_sessions import CLIENT_SESSION_BASE
from lazily_queue.replicated.state_machine import StateMachine

SESSION = CLIENT_SESSION_BASE + 5
_seq = iter(range(1, 10_000))


def _apply(sm: StateMachine, *op_list: list[Any]) -> list[Any]:
    result = sm.apply(encode_command(1, 0, [[next(_seq), *op] for op in op_list]), 1_000)
    assert isinstance(result, list)
    return result


def _file(state: dict[str, Any]) -> bytes:
    return encode_snapshot({"format": 1, "state": state, "last": [b"b", 9, 1],
                            "prev": [b"a", 8, 1], "members": ["1"]})


def test_records_are_made_where_the_snapshot_is_encoded_as_they_were_captured(
        monkeypatch: pytest.MonkeyPatch) -> None:
    sm = StateMachine()
    _apply(sm, [ops.WORK_DECLARE, "w", 30_000, 1],
           *[[ops.WORK_PUSH, "w", f"job{i}"] for i in range(12)])
    ((claimed, _),) = _apply(sm, [ops.WORK_CLAIM_MANY, "w", "worker", 3, None])
    ids = [d["delivery_id"] for d in claimed]
    _apply(sm, [ops.WORK_NACK, "w", "worker", ids[0]])  # one attempt allowed: a dead letter
    _apply(sm, [ops.CLIENT_OP, SESSION, 1, 0, ops.QUEUE_DECLARE, "q", None],
           [ops.CLIENT_OP, SESSION, 2, 0, ops.QUEUE_PUSH, "q", "x"])
    plain = sm.capture()
    made: list[str] = []
    for record in (PendingItem, Delivery, DeadLetter):
        original = record.to_dict
        monkeypatch.setattr(record, "to_dict",
                            lambda self, original=original: made.append("x") or original(self))
    deferred = sm.capture(deferred=True)
    assert made == []  # nothing per record on the loop
    core = deferred["work_queues"]["w"]["core"]
    assert all(type(core[key]) is Later for key in ("pending", "in_flight", "dead_letters"))
    assert type(deferred["sessions"][str(SESSION)][2]) is Later
    # The state machine goes on before the writer encodes what was captured.
    _apply(sm, [ops.WORK_PUSH, "w", "later"], [ops.WORK_ACK, "w", "worker", ids[1]],
           [ops.WORK_CLAIM, "w", "other", None],
           [ops.CLIENT_OP, SESSION, 3, 3, ops.QUEUE_PUSH, "q", "y"])
    before = len(made)  # (a claim's answer is made of its deliveries too)
    assert _file(deferred) == _file(plain)
    assert len(made) - before == 9 + 2 + 1  # pending, in flight, dead letters
    assert _file(sm.capture(deferred=True)) != _file(plain)
