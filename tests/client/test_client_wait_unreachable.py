"""A client's wait on its mirror (a claim on a work queue it shows empty, a topic's
``advance``) that reaches its timeout while no member is linked says so: ``Unreachable``
naming the address's failure, not a ``TimeoutError`` saying that nothing arrived."""

from __future__ import annotations

import pytest

from lazily_queue import ClientAccess, ClientGrant, Credentials, Unreachable, connect
from tests.client.one_member import TOKEN, one_member

pytestmark = pytest.mark.timeout(60)


async def test_a_wait_without_a_member_raises_unreachable() -> None:
    access = ClientAccess([ClientGrant("web", TOKEN, produce=["*"], consume=["*"])])
    async with one_member(access) as member:
        address = member.listen or ""
        client = await connect([address], Credentials("web", TOKEN))
        jobs = client.work_queue("jobs")
        news = client.topic("news")
        await news.subscribe("reader")
    try:
        with pytest.raises(Unreachable, match="no member reachable"):
            await client.barrier(timeout=1)   # the member is gone: the client knows it
        with pytest.raises(Unreachable, match=r"^claim from work queue 'jobs': no pending "
                           r"item within timeout=0.2s; the call applied nothing: no member "
                           r"reachable \(unix:"):
            await jobs.claim("worker", timeout=0.2)
        with pytest.raises(Unreachable, match=r"^advance of 'reader' on topic 'news': .*"
                           r"no member reachable"):
            await news.advance("reader", timeout=0.2)
    finally:
        await client.close()
