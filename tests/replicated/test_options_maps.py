"""One decoder reads the options map of every push with options: a bad map refuses the
op (``bad_options`` naming it) on every member alike, nothing changed."""

from __future__ import annotations

from typing import Any

import pytest

from lazily_queue.core.work_options import WorkPushOptions
from lazily_queue.replicated import ops as C
from lazily_queue.replicated.ops import OpError, OpRefused
from lazily_queue.replicated.options import decode_options, decode_work_options
from lazily_queue.replicated.state_machine import StateMachine

#: Each op with options, its arguments around a map.
OPS: dict[int, Any] = {
    C.QUEUE_PUSH_OPTIONS: lambda doc: ["q", doc, "v"],
    C.WORK_PUSH_OPTIONS: lambda doc: ["w", doc, None, "v"],
    C.TOPIC_PUBLISH_OPTIONS: lambda doc: ["t", doc, "v"],
}
BAD_MAPS = [[], {"colour": 1}, {"msg_id": 3}, {"ttl_ms": -1}, {"headers": {"k": 1}}]


def _members() -> list[StateMachine]:
    members = [StateMachine(), StateMachine()]
    for sm in members:
        sm.apply_plain(C.QUEUE_DECLARE, ["q", None])
        sm.apply_plain(C.WORK_DECLARE, ["w", 1000, 3])
        sm.apply_plain(C.TOPIC_DECLARE, ["t"])
    return members


@pytest.mark.parametrize("code", sorted(OPS))
@pytest.mark.parametrize("doc", BAD_MAPS, ids=str)
def test_a_bad_options_map_is_refused_whole_naming_the_op(code: int, doc: Any) -> None:
    answers = []
    for sm in _members():
        before = sm.capture()
        answers.append(sm.apply_plain(code, OPS[code](doc)))
        assert sm.capture() == before
    first, second = answers
    assert isinstance(first, OpError) and first.code == "bad_options"
    assert first.message.startswith(f"{C.op_name(code)}: ") and first == second


def test_each_op_reads_only_its_own_options() -> None:
    assert decode_work_options({"priority": 3}).priority == 3
    for code in (C.QUEUE_PUSH_OPTIONS, C.TOPIC_PUBLISH_OPTIONS):
        with pytest.raises(OpRefused):
            decode_options(code, {"priority": 3})
    with pytest.raises(OpRefused):
        decode_options(C.TOPIC_PUBLISH_OPTIONS, {"delay_ms": 5})
    queue = decode_options(C.QUEUE_PUSH_OPTIONS, {"delay_ms": 5, "msg_id": "m"})
    assert (queue.delay_ms, queue.msg_id) == (5, "m")
    assert not isinstance(queue, WorkPushOptions)
