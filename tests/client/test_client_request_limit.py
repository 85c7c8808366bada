"""An op larger than the request frames the member reads fails with MessageTooLarge at
once, not applied; it never makes the member drop the link (a client that sent it again
on every new link flapped until its timeout, then said it may have applied)."""

from __future__ import annotations

import pytest

from lazily_queue import Credentials, connect
from lazily_queue.errors import MessageTooLarge
from tests.client.one_member import TOKEN, one_member

pytestmark = pytest.mark.timeout(60)


async def test_an_op_over_the_members_request_limit_fails_at_once_on_one_link() -> None:
    async with one_member() as node:
        assert node.listen is not None
        async with connect(node.listen, Credentials("web", TOKEN), op_timeout=5) as client:
            q = client.queue("q")
            with pytest.raises(MessageTooLarge, match="it was not applied") as caught:
                await q.push(b"x" * 2_000_000)  # the first op: before the hello's answer
            assert caught.value.limit == client._link.max_request  # type: ignore[union-attr]
            await q.push("small")
            with pytest.raises(MessageTooLarge, match="request limit of member 1"):
                await q.push(b"x" * 3_000_000)
            assert client.links == 1
        await node.barrier()
        assert node.view.queue("q").elements() == ["small"]  # type: ignore[union-attr]


async def test_a_member_with_a_larger_limit_takes_a_large_op() -> None:
    async with one_member(max_message_bytes=3 * 1024 * 1024) as node:
        assert node.listen is not None
        async with connect(node.listen, Credentials("web", TOKEN), op_timeout=5) as client:
            await client.queue("q").push(b"x" * 2_000_000)
            assert client.links == 1
        await node.barrier()
        assert node.view.queue("q").len() == 1  # type: ignore[union-attr]
