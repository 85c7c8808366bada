"""A client that left its member because it answered a ping that it cannot commit (it
has heard from no leader) asks the member of its next link at once, before what else it
sends there is answered, and leaves it when it says so again: a pop on that client
raises ``Unreachable`` naming what the member said, not a ``TimeoutError`` saying that
the queue is empty."""

from __future__ import annotations

import asyncio

import pytest

from lazily_queue import ClientAccess, ClientGrant, Credentials, Unreachable, connect
from tests.client.one_member import TOKEN, one_member

pytestmark = pytest.mark.timeout(60)

SAID = "no quorum: node 1 has heard from no leader for 2 s or more (planted)"


async def test_a_wait_on_a_member_that_said_it_cannot_commit_names_why(
        monkeypatch: pytest.MonkeyPatch) -> None:
    access = ClientAccess([ClientGrant("web", TOKEN, produce=["*"], consume=["*"])])
    async with one_member(access) as member:
        async with connect([member.listen or ""], Credentials("web", TOKEN),
                           op_timeout=2) as client:
            jobs = client.queue("jobs")
            await jobs.push("a")
            assert await jobs.pop() == "a"  # a session, and the queue mirrored
            monkeypatch.setattr(member.driver.replica, "leaderless", lambda: SAID)
            async with asyncio.timeout(30):  # its quiet link's ping is answered so
                while client.links < 2:  # noqa: ASYNC110 - no event counts links
                    await asyncio.sleep(0.01)
            # linked again, to the same member: the wait ends with what it said
            with pytest.raises(Unreachable, match="heard from no leader"):
                await jobs.pop(timeout=0)
            monkeypatch.undo()  # it can commit again: the client closes through it
