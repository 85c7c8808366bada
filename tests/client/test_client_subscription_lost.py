"""An ephemeral subscription a client started is owned by its session: when the cluster
gives the session up, the subscription goes with it, and the client's stream of it
raises ``SubscriptionLost`` (naming the cause and the fix) rather than a bare
``UnknownSubscriber``; subscribed again, it streams under the client's new session."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from lazily_queue import ClientAccess, ClientGrant, SubscriptionLost, UnknownSubscriber
from lazily_queue.replicated import state_machine as sm_module
from tests.client.one_member import TOKEN, one_member
from tests.client.test_client_session_register import _client, _others_push_it_out

pytestmark = pytest.mark.timeout(60)


async def test_a_stream_whose_ephemeral_subscription_went_with_its_session_says_so(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sm_module, "MAX_CLIENT_SESSIONS", 2)
    access = ClientAccess([ClientGrant("web", TOKEN, produce=["*"], consume=["*"])])
    async with one_member(access) as node, _client(node.listen or "") as client:
        sm = node.view._sm
        news = client.topic("news")
        await news.subscribe("live", "ephemeral")
        first = client.session.id
        got: list[Any] = []

        async def read() -> None:
            async for value in news.stream("live"):
                got.append(value)

        reader = asyncio.ensure_future(read())
        await node.topic("news").publish(1)
        for _ in range(50):  # until the session is given up with its subscription
            if first not in sm.sessions:
                break
            await _others_push_it_out(node.listen or "")
        assert first not in sm.sessions
        with pytest.raises(SubscriptionLost, match="subscribe it again") as lost:
            await asyncio.wait_for(reader, 10)
        assert isinstance(lost.value, UnknownSubscriber)
        assert "'live', 'ephemeral'" in str(lost.value)
        assert got == [1]
        await node.topic("news").publish(2)  # while it had no subscription: not delivered
        with pytest.raises(SubscriptionLost):  # a new stream says so too
            await anext(aiter(news.stream("live")))
        await news.subscribe("live", "ephemeral")  # under a new session
        assert client.session.id not in (0, first)
        await node.topic("news").publish(3)
        assert await asyncio.wait_for(anext(aiter(news.stream("live"))), 10) == 3
        await news.disconnect("live")
        with pytest.raises(UnknownSubscriber) as ended:  # it ended it itself
            await anext(aiter(news.stream("live")))
        assert not isinstance(ended.value, SubscriptionLost)
