"""A wait that reaches its ``timeout`` raises ``TimeoutError`` saying what did not come
(the call, its object), the timeout and that the call applied nothing; the state is
unchanged; a cancellation from outside stays a cancellation."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from lazily_queue import QueueCell, TopicCell, WorkQueueCell

pytestmark = pytest.mark.timeout(30)


def _waits() -> list[tuple[str, Callable[[float], Awaitable[Any]], str, Callable[[], Any]]]:
    empty: QueueCell[int] = QueueCell(name="jobs")
    full: QueueCell[int] = QueueCell(name="full", capacity=1)
    full.try_push(1)
    work: WorkQueueCell[int] = WorkQueueCell(name="tasks")
    topic: TopicCell[int] = TopicCell(name="news")
    topic.try_subscribe("s")
    return [
        ("pop", lambda t: empty.pop(timeout=t), "pop from queue 'jobs': no element",
         lambda: empty.len()),
        ("pop_many", lambda t: empty.pop_many(3, timeout=t),
         "pop from queue 'jobs': no element", lambda: empty.len()),
        ("pop_message", lambda t: empty.pop_message(timeout=t),
         "pop from queue 'jobs': no element", lambda: empty.len()),
        ("push", lambda t: full.push(2, timeout=t), "push to queue 'full': no room",
         lambda: full.len()),
        ("claim", lambda t: work.claim("w", timeout=t),
         "claim from work queue 'tasks': no pending item", lambda: work.in_flight()),
        ("claim_many", lambda t: work.claim_many("w", 2, timeout=t),
         "claim from work queue 'tasks': no pending item", lambda: work.in_flight()),
        ("advance", lambda t: topic.advance("s", timeout=t),
         "advance of 's' on topic 'news': no unread element",
         lambda: topic.subscriptions()["s"]["cursor"]),
    ]


NAMES = ["pop", "pop_many", "pop_message", "push", "claim", "claim_many", "advance"]


@pytest.mark.parametrize("timeout", [0, 0.02])
@pytest.mark.parametrize("name", NAMES)
async def test_a_wait_past_its_timeout_says_what_did_not_come(name: str, timeout: float) -> None:
    _, call, waited, state = next(w for w in _waits() if w[0] == name)
    before = state()
    with pytest.raises(TimeoutError) as raised:
        await call(timeout)
    assert str(raised.value) == (
        f"{waited} within timeout={timeout}s; the call applied nothing (call it again, "
        f"or give it a longer timeout)")
    assert state() == before


@pytest.mark.parametrize("name", NAMES)
async def test_a_wait_cancelled_from_outside_is_no_timeout(name: str) -> None:
    _, call, _, state = next(w for w in _waits() if w[0] == name)
    before = state()
    task = asyncio.ensure_future(call(30))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    with pytest.raises(TimeoutError) as raised:
        await asyncio.wait_for(call(30), 0.01)
    assert str(raised.value) == ""  # the caller's own timeout: asyncio's error, untouched
    assert state() == before


async def test_a_wait_past_a_timeout_too_long_to_print_names_its_size() -> None:
    queue: QueueCell[int] = QueueCell(name="jobs")
    with pytest.raises(TimeoutError, match=r"^pop from queue 'jobs': no element within "
                       r"timeout=an int of 16610 bits"):
        await queue.pop(timeout=-10**5000)
