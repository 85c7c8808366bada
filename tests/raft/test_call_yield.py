"""When a call whose op was applied inside its own proposal (a one-member commit) lets
the loop run: at most every ``YIELD_EVERY`` seconds, so a loop of such calls neither
pays a loop turn per call nor keeps the loop's other work waiting for long."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from lazily_queue import testing
from lazily_queue.node import Node
from lazily_queue.raft import calls


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[Node]:
    async with Node(1, data_dir=tmp_path, listen=f"unix:{tmp_path}/n.sock", secret="s",
                    engine=testing.FAST_ENGINE, maintenance_interval=None) as node:
        await node.wait_for_leader()
        driver = node.driver
        driver.tick_interval = 3600.0  # no timer step in the middle of a test
        driver.fsync.policy.inline_below = 3600.0  # every fsync on the loop's thread
        await node.queue("q").push("first")
        yield node


def _due_now() -> list[int]:
    """A callback due now: it runs in the loop's next turn, after the callbacks already
    ready (a task resumed in that turn sees it run only in the turn after)."""
    ran: list[int] = []
    loop = asyncio.get_running_loop()
    loop.call_at(loop.time(), ran.append, 1)
    return ran


async def test_calls_applied_in_their_proposal_return_without_a_loop_turn(
    node: Node, monkeypatch: pytest.MonkeyPatch,
) -> None:
    if getattr(asyncio.get_running_loop(), "_ready", None) is None:
        pytest.skip("this loop does not show its ready callbacks (uvloop): a call never "
                    "steps inside its proposal there")
    monkeypatch.setattr(calls, "YIELD_EVERY", 3600.0)
    queue = node.queue("q")
    await queue.push("yielded")  # the first such call yields
    ran = _due_now()
    for n in range(20):
        await queue.push(n)
    assert ran == []  # twenty pushes applied, the loop never turned
    assert len(queue) == 22
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert ran == [1]


async def test_a_loop_of_such_calls_lets_the_loop_run(
    node: Node, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(calls, "YIELD_EVERY", 0.002)
    queue = node.queue("q")
    ran = _due_now()
    for n in range(10_000):  # far longer than 2 ms in all
        await queue.push(n)
        if ran:
            break
    assert ran == [1]
