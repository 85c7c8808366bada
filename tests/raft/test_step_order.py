"""When the driver steps: callers whose operations just completed run before a step that
was scheduled earlier (what they propose then joins it)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from lazily_queue import testing
from lazily_queue.node import Node
from lazily_queue.replicated import ops


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[Node]:
    async with Node(1, data_dir=tmp_path, listen=f"unix:{tmp_path}/n.sock", secret="s",
                    engine=testing.FAST_ENGINE, maintenance_interval=None) as node:
        await node.wait_for_leader()
        await node.queue("q").push("first")
        driver = node.driver
        driver.tick_interval = 3600.0  # no timer step in the middle of a test
        driver.fsync.policy.inline_below = 3600.0
        loop = asyncio.get_running_loop()
        for _ in range(500):
            if driver._timer is not None and driver._timer.when() > loop.time() + 60:
                break
            await asyncio.sleep(0.01)
        else:
            raise AssertionError("the timer was not re-armed")
        yield node


async def _until(predicate: Callable[[], bool], turns: int = 100) -> None:
    """Let the loop run until ``predicate()`` holds (a bounded number of turns)."""
    for _ in range(turns):
        if predicate():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition not reached")


async def test_a_completed_caller_runs_before_a_step_scheduled_before_it_completed(
    node: Node,
) -> None:
    driver = node.driver
    order: list[str] = []
    driver.step_observers.append(lambda: order.append("step"))
    driver.wake()  # a step is scheduled (as when a frame arrives)
    _, fut = driver.propose(ops.QUEUE_PUSH, ["q", "a"], timeout=5.0)
    fut.add_done_callback(lambda _: order.append("caller"))
    driver._step()  # a run of frames steps at once: the push completes
    assert fut.done()
    order.clear()
    driver.wake()  # another frame arrives in the same loop iteration
    await _until(lambda: len(order) >= 2)
    assert order[:2] == ["caller", "step"]


async def test_what_the_resumed_caller_proposes_joins_that_step(node: Node) -> None:
    driver = node.driver
    driver.wake()
    _, fut = driver.propose(ops.QUEUE_PUSH, ["q", "a"], timeout=5.0)
    proposed: list[asyncio.Future[object]] = []
    fut.add_done_callback(lambda _: proposed.append(
        driver.propose(ops.QUEUE_PUSH, ["q", "b"], timeout=5.0)[1]))
    driver._step()
    steps = driver.steps
    driver.wake()
    await _until(lambda: bool(proposed) and proposed[0].done())
    assert driver.steps == steps + 1  # one step for the frame and the new push
    assert node.queue("q").storage.elements()[-2:] == ["a", "b"]  # type: ignore[attr-defined]


async def test_a_pending_step_runs_at_once_when_nothing_else_could_join_it(node: Node) -> None:
    if getattr(asyncio.get_running_loop(), "_ready", None) is None:
        pytest.skip("this loop does not show its ready callbacks (uvloop): the driver "
                    "cannot tell that nothing else is ready, and never steps early there")
    driver = node.driver
    assert not driver.step_if_idle()  # nothing pending
    _, fut = driver.propose(ops.QUEUE_PUSH, ["q", "a"], timeout=5.0)  # wakes: a step pending
    assert not fut.done()
    assert driver.step_if_idle()
    assert fut.done() and fut.exception() is None
    assert not driver.step_if_idle()  # that step took the input: nothing pending any more


async def test_a_pending_step_waits_when_another_callback_is_ready(node: Node) -> None:
    driver = node.driver
    _, fut = driver.propose(ops.QUEUE_PUSH, ["q", "b"], timeout=5.0)
    asyncio.get_running_loop().call_soon(lambda: None)  # could propose before the step
    assert not driver.step_if_idle()
    assert not fut.done()
    await fut  # the scheduled step applies it in the loop's next iteration
