"""Where fsyncs run: on the loop's thread while they are quick, on the worker thread while
they are slow; a member commits when its fsync completes, not on a timer tick."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from lazily_queue import testing
from lazily_queue.node import Node
from lazily_queue.raft.errors import StorageUnavailable
from lazily_queue.raft.fsync import INLINE_BELOW, INLINE_BYTES, Fsyncer, InlinePolicy
from lazily_queue.replicated import ops

from .faulty_disk import FaultyDisk


def test_the_policy_runs_small_fsyncs_inline_while_the_last_was_quick() -> None:
    policy = InlinePolicy()
    assert policy.inline(100)  # nothing measured yet
    policy.took(INLINE_BELOW * 2)
    assert not policy.inline(100)
    policy.took(INLINE_BELOW / 2)
    assert policy.inline(100)
    assert not policy.inline(INLINE_BYTES + 1)  # much written: the loop goes on meanwhile
    policy.started(INLINE_BYTES + 1)
    assert policy.inline(INLINE_BYTES + 101)  # counted from the previous fsync's start
    never = InlinePolicy(0.0)
    assert not never.inline(0)


def test_an_inline_fsync_returns_its_error_and_counts_only_successes() -> None:
    failures = [OSError(5, "Input/output error")]

    def fsync() -> None:
        if failures:
            raise failures.pop()

    fsyncer = Fsyncer(fsync, "1")
    seen: list[float] = []
    fsyncer.observer = seen.append
    error = fsyncer.run()
    assert isinstance(error, OSError) and fsyncer.count == 0 and not seen
    assert fsyncer.run() is None
    assert fsyncer.count == fsyncer.inline_count == 1 and len(seen) == 1


async def test_a_worker_fsync_reports_on_the_loop_and_counts() -> None:
    ran: list[str] = []
    fsyncer = Fsyncer(lambda: ran.append("fsync"), "1")
    done: asyncio.Future[BaseException | None] = asyncio.get_running_loop().create_future()
    fsyncer.start(asyncio.get_running_loop(), done.set_result)
    try:
        assert await asyncio.wait_for(done, 5) is None
    finally:
        fsyncer.shutdown()
    assert ran == ["fsync"] and fsyncer.count == 1 and fsyncer.inline_count == 0


async def _until(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.01)


async def _quiet(node: Node) -> None:
    """Stop the node's timer ticks (the step after a push must come from the push)."""
    driver = node.driver
    driver.tick_interval = 3600.0
    loop = asyncio.get_running_loop()
    await _until(lambda: driver._timer is not None and driver._timer.when() > loop.time() + 60)


@pytest.fixture
async def single(tmp_path: Path) -> AsyncIterator[tuple[Node, FaultyDisk]]:
    disk = FaultyDisk()
    node = Node(1, data_dir=tmp_path, listen=f"unix:{tmp_path}/n.sock", secret="s",
                engine=testing.FAST_ENGINE, disk=disk, maintenance_interval=None)
    async with node:
        await node.wait_for_leader()
        await node.queue("q").push("first")
        await _quiet(node)
        yield node, disk


async def test_one_member_commits_in_the_step_that_appends(
    single: tuple[Node, FaultyDisk],
) -> None:
    node, _ = single
    driver = node.driver
    driver.fsync.policy.inline_below = 3600.0  # however slow this machine's disk is
    steps, inline = driver.steps, driver.fsync.inline_count
    for i in range(5):
        await node.queue("q").push(i)
    assert driver.fsync.inline_count - inline == 5  # one fsync per push, on the loop
    assert driver.steps - steps == 5  # and the tick after it committed the push


async def test_one_member_commits_when_its_worker_fsync_completes(
    single: tuple[Node, FaultyDisk],
) -> None:
    node, _ = single
    driver = node.driver
    driver.fsync.policy.inline_below = 0.0
    count, inline = driver.fsync.count, driver.fsync.inline_count
    for i in range(3):
        await node.queue("q").push(i)  # no timer tick: the completed fsync steps the node
    assert driver.fsync.count - count >= 3 and driver.fsync.inline_count == inline


def _loop_shows_ready_callbacks() -> bool:
    """Whether the driver can see the loop's ready callbacks (the standard loop; not
    uvloop, where a proposal always waits for the scheduled step)."""
    return hasattr(asyncio.get_running_loop(), "_ready")


async def _idle(node: Node) -> None:
    """Yield until nothing else is ready to run on the loop (at once on a loop whose
    ready callbacks the driver cannot see)."""
    if not _loop_shows_ready_callbacks():
        return
    for _ in range(100):
        if node.driver._idle():
            return
        await asyncio.sleep(0)
    raise AssertionError("the loop never became idle")


@pytest.fixture
async def idle(single: tuple[Node, FaultyDisk]) -> Node:
    """The one-member node with every fsync inline, once nothing else is ready to run."""
    node, _ = single
    node.driver.fsync.policy.inline_below = 3600.0
    await _idle(node)
    return node


async def test_an_idle_member_steps_inside_the_proposal(idle: Node) -> None:
    node, driver = idle, idle.driver
    steps = driver.steps
    _, fut = driver.propose(ops.QUEUE_PUSH, ["q", "at once"], timeout=5.0, step_now=True)
    if _loop_shows_ready_callbacks():
        assert fut.done() and driver.steps == steps + 1
    else:  # the driver cannot tell the loop is idle: the scheduled step takes it
        assert not driver._idle() and not fut.done()
        await fut
    assert node.queue("q").storage.elements()[-1] == "at once"  # type: ignore[attr-defined]


async def test_a_proposal_waits_for_the_batched_step_while_other_work_is_ready(
    idle: Node,
) -> None:
    driver = idle.driver
    asyncio.get_running_loop().call_soon(lambda: None)  # it could propose too
    _, fut = driver.propose(ops.QUEUE_PUSH, ["q", "later"], timeout=5.0, step_now=True)
    assert not fut.done()
    _, other = driver.propose(ops.QUEUE_PUSH, ["q", "with it"], timeout=5.0)
    steps = driver.steps
    await fut
    assert other.done() and driver.steps == steps + 1  # one step for both


async def test_the_drivers_own_pending_callbacks_do_not_hold_a_proposal_back(
    idle: Node,
) -> None:
    """A scheduled step whose input an earlier step already took, and a pending commit
    publication, propose nothing: a proposal still steps at once."""
    if not _loop_shows_ready_callbacks():
        pytest.skip("the driver cannot see the loop's ready callbacks")
    driver = idle.driver
    driver.wake()  # a step scheduled, as a frame's arrival schedules one...
    driver._step()  # ... whose input the frames' own step took at once
    driver._publishing = True
    asyncio.get_running_loop().call_soon(driver._publish_commit)
    steps = driver.steps
    _, fut = driver.propose(ops.QUEUE_PUSH, ["q", "at once"], timeout=5.0, step_now=True)
    assert fut.done() and driver.steps == steps + 1
    driver.wake()  # input arrived and its step is pending: the proposal joins it
    _, later = driver.propose(ops.QUEUE_PUSH, ["q", "joins"], timeout=5.0, step_now=True)
    assert not later.done()
    await later


async def test_calls_that_step_at_once_still_let_the_loop_run(idle: Node) -> None:
    node = idle
    fired: list[bool] = []
    asyncio.get_running_loop().call_later(0, fired.append, True)  # due at the next turn
    for i in range(5):
        await node.queue("q").push(i)
    assert fired  # the pushes yielded to the loop: the timer did not wait for them all


class SlowDisk(FaultyDisk):
    """Fsyncs that take ``delay`` seconds."""

    delay = 0.0

    def sync(self, path: str) -> None:
        if self.delay:
            time.sleep(self.delay)
        super().sync(path)

    def sync_detached(self, path: str) -> None:
        if self.delay:
            time.sleep(self.delay)
        super().sync_detached(path)


async def test_a_slow_fsync_sends_the_next_to_the_worker_thread_until_one_is_quick(
    tmp_path: Path,
) -> None:
    disk = SlowDisk(sync=False)  # no real fsync: only the delays below
    async with Node(1, data_dir=tmp_path, listen=f"unix:{tmp_path}/n.sock", secret="s",
                    engine=testing.FAST_ENGINE, disk=disk, maintenance_interval=None) as node:
        await node.wait_for_leader()
        q = node.queue("q")
        await q.push("first")
        await _quiet(node)
        fsync = node.driver.fsync
        disk.delay = INLINE_BELOW * 5
        await q.push("slow")  # its fsync ran inline, and was slow
        inline, count = fsync.inline_count, fsync.count
        await q.push("on the worker thread")
        assert fsync.inline_count == inline and fsync.count > count
        disk.delay = 0.0
        await q.push("quick, on the worker thread")
        inline = fsync.inline_count
        await q.push("inline again")
        assert fsync.inline_count > inline
        assert q.storage.elements() == [  # type: ignore[attr-defined]
            "first", "slow", "on the worker thread", "quick, on the worker thread",
            "inline again"]


@pytest.mark.parametrize("where", ["inline", "worker"])
async def test_a_failed_fsync_stalls_the_node_wherever_it_ran(
    tmp_path: Path, where: str
) -> None:
    disk = FaultyDisk()
    async with Node(1, data_dir=tmp_path, listen=f"unix:{tmp_path}/n.sock", secret="s",
                    engine=testing.FAST_ENGINE, disk=disk, disk_retry=0.05) as node:
        await node.wait_for_leader()
        q = node.queue("q")
        await q.push("kept")
        node.driver.fsync.policy.inline_below = 3600.0 if where == "inline" else 0.0
        node.driver.fsync.policy.took(0.0)
        disk.fsync_errors = 1
        with pytest.raises(StorageUnavailable, match="Input/output error"):
            await q.push("unknown")
        await _until(lambda: bool(node.status()["disk"]["writable"]))  # by itself
        before = node.driver.fsync.inline_count
        await q.push("after")
        assert (node.driver.fsync.inline_count > before) == (where == "inline")
        elements = q.storage.elements()  # type: ignore[attr-defined]
    assert elements in (["kept", "after"], ["kept", "unknown", "after"])
