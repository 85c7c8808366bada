"""An op whose request the client still holds at its deadline: on a link that sent
nothing for :data:`STALLED` seconds it was not applied (the link is closed, dropping the
request); on a link still sending it is not closed for it, and the op may have applied
(the rest of its request may still go)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from lazily_queue.client.deadlines import STALLED
from lazily_queue.client.session import Session
from lazily_queue.raft.errors import CommitTimeout
from lazily_queue.replicated import ops
from lazily_queue.replicated.session_register import REGISTERED_BASE

pytestmark = pytest.mark.timeout(30)


class _HoldingLink:
    """A link still holding every request made on it (its member reads nothing)."""

    features: frozenset[str] = frozenset()

    def __init__(self, moved_at: float) -> None:
        self.moved_at = moved_at
        self.member, self.heard = "1", moved_at
        self.pinged: float | None = None
        self.open = True
        self.closed: list[str] = []
        self.last_frame = 0

    def send_op(self, seq: int, floor: int, code: int, args: bytes, timeout_ms: int,
                on_answer: Callable[[Any], None]) -> int:
        return seq

    def holds(self, frame: int) -> bool:
        return True

    def stalled_for(self, now: float) -> float:
        return now - self.moved_at

    def close(self, reason: str) -> None:
        self.open = False
        self.closed.append(reason)

    def forget(self, rid: int) -> None:
        pass


async def _expired(link: _HoldingLink) -> CommitTimeout:
    session = Session(owner="web", max_in_flight=8, link=lambda: link,  # type: ignore[arg-type, return-value]
                      drop=lambda _link, _reason: None, unreachable=RuntimeError)
    session.open = True
    session.id = REGISTERED_BASE + 1
    _op, future = session.propose(ops.QUEUE_PUSH, ["q", "x"], timeout=0.2)
    with pytest.raises(CommitTimeout) as failed:
        await future
    session.close()
    return failed.value


async def test_a_request_held_on_a_stalled_link_was_not_applied() -> None:
    link = _HoldingLink(moved_at=asyncio.get_running_loop().time() - 2 * STALLED)
    error = await _expired(link)
    assert error.applied is False and "was not applied" in str(error)
    assert link.closed  # what it held is dropped: it never reaches the member


async def test_a_request_held_on_a_link_still_taking_frames_may_have_applied() -> None:
    link = _HoldingLink(moved_at=asyncio.get_running_loop().time() + 60)  # sending still
    error = await _expired(link)
    assert error.applied is None and "may have applied" in str(error)
    assert not link.closed


async def test_a_timeout_on_a_member_that_answers_says_it_did_not_commit() -> None:
    link = _HoldingLink(moved_at=asyncio.get_running_loop().time() + 60)
    link.heard = asyncio.get_running_loop().time()
    error = await _expired(link)
    assert "(member 1 answers, its last frame 0." in str(error)
    assert "but did not commit it: it may know no leader" in str(error)


async def test_a_timeout_on_a_silent_member_names_its_unanswered_ping() -> None:
    now = asyncio.get_running_loop().time()
    link = _HoldingLink(moved_at=now + 60)
    link.heard, link.pinged = now - 3, now - 1
    error = await _expired(link)
    assert "(member 1 has sent nothing for 3." in str(error)
    assert "nor answered a ping sent 1." in str(error)
