"""A client session's floor (its oldest unanswered op) as answers arrive in any order,
and each answer reaching the op it was sent for, over a link that records what it sends."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from lazily_queue.client import protocol as P
from lazily_queue.client.session import Session
from lazily_queue.replicated import ops

pytestmark = pytest.mark.timeout(30)


class RecordingLink:
    """Keeps each op's floor and answer callback instead of sending it."""

    def __init__(self) -> None:
        self.sent: dict[int, tuple[int, Callable[[Any], None]]] = {}
        self._rid = 0

    def send_op(self, seq: int, floor: int, code: int, args: bytes, timeout_ms: int,
                on_answer: Callable[[Any], None]) -> int:
        self._rid += 1
        self.sent[seq] = (floor, on_answer)
        return self._rid

    def forget(self, rid: int) -> None:
        pass

    def answer(self, seq: int, result: Any) -> None:
        self.sent[seq][1]((P.OK, [0, result]))


def _session(link: RecordingLink) -> Session:
    session = Session(owner="web", max_in_flight=64, link=lambda: link,  # type: ignore[arg-type, return-value]
                      drop=lambda _link, _reason: None, unreachable=RuntimeError)
    session.open = True
    return session


async def test_the_floor_is_the_oldest_unanswered_op_whatever_the_answer_order() -> None:
    link = RecordingLink()
    session = _session(link)
    futures = [session.propose(ops.QUEUE_PUSH, ["q", i], timeout=30)[1] for i in range(5)]
    assert [link.sent[s][0] for s in range(1, 6)] == [1] * 5
    link.answer(2, "two")
    link.answer(4, "four")
    session.propose(ops.QUEUE_PUSH, ["q", 5], timeout=30)
    assert link.sent[6][0] == 1  # op 1 is still unanswered
    link.answer(1, "one")
    session.propose(ops.QUEUE_PUSH, ["q", 6], timeout=30)
    assert link.sent[7][0] == 3  # 1 and 2 answered, 3 not
    for seq in (3, 5, 6, 7):
        link.answer(seq, seq)
    last = session.propose(ops.QUEUE_PUSH, ["q", 7], timeout=30)[1]
    assert link.sent[8][0] == 8  # nothing older outstanding: the floor is the op itself
    link.answer(8, 8)
    assert [f.result() for f in futures] == ["one", "two", 3, "four", 5]
    assert await last == 8
    session.close()
