"""A member that reads a lone client's op while nothing else waits on its loop steps at
once in the task that read it, and sends the answer from there (no loop turn for the
step, none for the answer)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from lazily_queue import ClientAccess, ClientGrant, connect
from lazily_queue.replicated import ops
from tests.client.one_member import TOKEN, one_member


async def test_a_lone_clients_push_is_applied_and_answered_in_the_task_that_read_it() -> None:
    if getattr(asyncio.get_running_loop(), "_ready", None) is None:
        pytest.skip("this loop does not show its ready callbacks (uvloop): a member "
                    "never steps early there")
    async with one_member(ClientAccess([ClientGrant("web", TOKEN, produce=["*"],
                                                    consume=["*"])])) as node:
        driver = node.driver
        stepped: list[bool] = []
        step_if_idle = driver.step_if_idle

        def recorded() -> bool:
            stepped.append(step_if_idle())
            return stepped[-1]

        driver.step_if_idle = recorded  # type: ignore[method-assign]
        assert node.listen is not None
        async with connect([node.listen], ("web", TOKEN), op_timeout=5) as client:
            queue = client.queue("q")
            for n in range(20):
                await queue.push(n)
            assert await queue.pop_many(20) == list(range(20))
        assert stepped.count(True) >= 20


async def test_an_op_is_numbered_with_the_frame_it_goes_out_in() -> None:
    async with one_member() as node:
        assert node.listen is not None
        async with connect([node.listen], ("web", TOKEN), op_timeout=5) as client:
            await client.queue("q").push("linked")
            link, session = client._link, client.session
            assert link is not None
            frames = link.outbox.frames
            first, done_first = session.propose(ops.QUEUE_PUSH, ["q", 1], timeout=5)
            second, done_second = session.propose(ops.QUEUE_PUSH, ["q", 2], timeout=5)
            assert first.frame == second.frame == frames  # one batch, not yet sent
            assert link.holds(first.frame)
            await asyncio.gather(done_first, done_second)
            assert link.outbox.frames == frames + 1 and not link.holds(first.frame)
            assert node.view.queue("q").len() == 3


async def test_a_clients_answers_are_dispatched_in_the_callback_that_read_them() -> None:
    async with one_member() as node:
        assert node.listen is not None
        async with connect([node.listen], ("web", TOKEN), op_timeout=5) as client:
            queue = client.queue("q")
            await queue.push("linked")
            link = client._link
            assert link is not None
            tasks: list[asyncio.Task[Any] | None] = []
            frame = link._frame

            def recorded(data: bytes) -> None:
                tasks.append(asyncio.current_task())
                frame(data)

            link._frame = recorded  # type: ignore[method-assign]
            for n in range(5):
                await queue.push(n)
            assert len(tasks) >= 5
            assert tasks.count(None) == len(tasks)  # none by the reader task
