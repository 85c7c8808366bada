"""Members answering the client's session register with no session id of this client (a
version the client does not speak): each registered a session the client cannot use, so
once each member answered so in a row the client stops linking and fails its waiting ops
as not applied, rather than register one more session on every link."""

from __future__ import annotations

from typing import Any

import pytest

from lazily_queue import ClusterClient, connect
from lazily_queue.client import protocol as P
from lazily_queue.client import server as server_module
from lazily_queue.replicated.client_sessions import OWNER_SHIFT
from lazily_queue.replicated.session_register import REGISTERED_BASE
from tests.client.one_member import TOKEN, one_member
from tests.client.test_client_cluster import cluster_with_clients

pytestmark = pytest.mark.timeout(60)


def _answer_another_clients_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    answer = server_module.ClientServer._answer

    def foreign(self: Any, conn: Any, rid: int, result: Any, error: Any) -> None:
        if type(result) is int and result >= REGISTERED_BASE:
            result ^= 1 << OWNER_SHIFT  # the id of another client's tag
        answer(self, conn, rid, result, error)

    monkeypatch.setattr(server_module.ClientServer, "_answer", foreign)


async def test_a_member_answering_registers_badly_gets_one_session_registered(
        monkeypatch: pytest.MonkeyPatch) -> None:
    _answer_another_clients_ids(monkeypatch)
    async with one_member() as node, connect([node.listen or ""], ("web", TOKEN)) as client:
        with pytest.raises(P.Unreachable, match="with no session id of this client") as failed:
            await client.queue("q").push(1, timeout=10)
        assert failed.value.applied is False
        with pytest.raises(P.Unreachable):
            await client.queue("q").push(2, timeout=10)  # at once, registering nothing
        assert node.view._sm.registrations == 1
        assert isinstance(client, ClusterClient) and client.links == 1


async def test_each_member_of_a_cluster_is_asked_once(monkeypatch: pytest.MonkeyPatch) -> None:
    _answer_another_clients_ids(monkeypatch)
    async with cluster_with_clients() as (c, addresses):
        client = connect(addresses, ("web", TOKEN), prefer_leader=False)
        assert isinstance(client, ClusterClient)
        async with client:
            with pytest.raises(P.Unreachable, match="each of the 3 member"):
                await client.queue("q").push(1, timeout=20)
        leader = await c.leader()
        await leader.barrier()
        assert leader.view._sm.registrations == 3
