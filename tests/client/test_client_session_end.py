"""A client closing cleanly ends its session in the cluster (``SESSION_END``): the
session, its kept results and its ephemeral subscriptions go at once; started again,
the client opens a new session."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path

import pytest

from lazily_queue import ClientAccess, ClientGrant, Node, UnknownSubscriber, connect
from lazily_queue.client import protocol as P
from lazily_queue.client.cluster import ClusterClient
from lazily_queue.replicated.state_machine import CLIENT_SESSION_BASE, StateMachine
from tests.client.one_member import TOKEN, one_member

pytestmark = pytest.mark.timeout(60)


def _client_sessions(sm: StateMachine) -> set[int]:
    return {sid for sid in sm.sessions if sid > CLIENT_SESSION_BASE}


async def test_a_client_closing_cleanly_ends_its_session() -> None:
    async with one_member() as node:
        assert node.listen is not None
        sm = node.view._sm
        for value in range(20):  # a web tier opening a client per request
            async with connect([node.listen], ("web", TOKEN)) as client:
                await client.queue("q").push(value)
        assert _client_sessions(sm) == set() and len(sm.ended) == 20


async def test_a_client_started_again_opens_a_new_session() -> None:
    async with one_member() as node:
        assert node.listen is not None
        client = connect([node.listen], ("web", TOKEN))
        assert isinstance(client, ClusterClient)
        async with client:
            await client.queue("q").push(1)
            first = client.session.id
        async with client:
            await client.queue("q").push(2)
            assert client.session.id != first
            assert _client_sessions(node.view._sm) == {client.session.id}
        assert await node.queue("q").pop() == 1 and await node.queue("q").pop() == 2


async def test_a_member_without_the_feature_leaves_the_session_to_expire(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(P, "FEATURES", (P.GROUPS_FEATURE,))
    async with one_member() as node:
        assert node.listen is not None
        async with connect([node.listen], ("web", TOKEN)) as client:
            await client.queue("q").push(1)
        assert len(_client_sessions(node.view._sm)) == 1


async def test_a_member_waiting_on_an_id_a_closing_client_took_over_is_told_it_ended() -> None:
    """A member's ephemeral subscription a client subscribed since is the client's, and
    goes when the client closes: the member's advance waiting on it raises instead of
    waiting for ever."""
    path = Path(tempfile.mkdtemp(prefix="lqe-", dir="/tmp"))
    node = Node(1, data_dir=None, durability="none", listen=f"unix://{path}/n1.sock",
                secret=b"the-cluster-secret",
                clients=ClientAccess([ClientGrant("web", TOKEN, consume=["news"])]))
    try:
        await _member_told(node)
    finally:
        shutil.rmtree(path, ignore_errors=True)


async def _member_told(node: Node) -> None:
    async with node:
        await node.wait_for_leader()
        assert node.listen is not None
        news = node.topic("news")
        await news.subscribe("shared", "ephemeral")
        reader = news.reader("shared")
        assert not reader._observers
        waiting = asyncio.ensure_future(news.advance("shared"))
        async with asyncio.timeout(10):  # nothing unread: it waits, watching the reader
            while not reader._observers:  # noqa: ASYNC110 - polls plain state
                await asyncio.sleep(0.01)
        assert not waiting.done()
        async with connect([node.listen], ("web", TOKEN)) as client:
            await client.topic("news").subscribe("shared", "ephemeral")  # takes it over
        with pytest.raises(UnknownSubscriber, match="'shared' was dropped"):
            await asyncio.wait_for(waiting, 5)
        assert news.subscriptions() == {}
