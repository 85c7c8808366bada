"""A client numbers each op with the frame it goes out in (what it still holds of a
frame decides whether the member may have read its ops)."""

from __future__ import annotations

import asyncio

from lazily_queue import connect
from lazily_queue.replicated import ops
from tests.client.one_member import TOKEN, one_member


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
