"""A consume-only client gives back what its session popped after it linked again: to
another member once its own died, or to the same one over a new link. The member judges
a give-back by the session's record of popped elements as it applied them, never by the
link: still never what the session did not pop, nor twice."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from lazily_queue import ClientAccess, ClientGrant, ClusterClient, connect
from lazily_queue.client import protocol as P
from lazily_queue.client.connection import ClientConnection
from lazily_queue.node import Node
from lazily_queue.replicated import ops
from tests.client.one_member import one_member
from tests.client.test_client_cluster import TOKEN, client_of, cluster_with_clients

pytestmark = pytest.mark.timeout(60)

READER = b"token-of-a-consume-only-reader"


async def test_a_client_whose_member_died_gives_back_its_prefetch_elsewhere() -> None:
    async with cluster_with_clients(consume=["jobs"]) as (c, addresses):
        leader = await c.leader()
        for n in range(4):
            await leader.queue("jobs").push(n)
        await leader.barrier()
        async with client_of(addresses) as client:
            jobs = client.queue("jobs")
            taken = await jobs.pop_messages(3)
            assert [m.value for m in taken] == [0, 1, 2]
            first = client.member
            assert first is not None
            await c.kill(first)
            await client.barrier()  # linked to a survivor, which applied the pop
            assert client.member not in (None, first)
            await jobs.give_back(taken[1:])
            with pytest.raises(P.PermissionDenied, match="did not give back"):
                await jobs.give_back(taken[1:])  # not twice
            await client.barrier()
            survivor = c.node(client.member or "")
            assert await survivor.queue("jobs").pop_many(4) == [1, 2, 3]


def _close_links(node: Node) -> None:
    assert node.clients is not None
    for conn in list(node.clients._conns):
        conn.close()


async def test_a_client_linked_again_gives_back_only_what_its_session_popped() -> None:
    access = ClientAccess([ClientGrant("reader", READER, consume=["jobs"]),
                           ClientGrant("web", TOKEN, produce=["*"], consume=["*"])])
    async with one_member(access) as node:
        for n in range(4):
            await node.queue("jobs").push(n)
        reader = connect([node.listen or ""], ("reader", READER), ping_interval=0.2,
                         ping_timeout=1.0)
        other = connect([node.listen or ""], ("web", TOKEN))
        assert isinstance(reader, ClusterClient) and isinstance(other, ClusterClient)
        async with reader, other:
            mine = await reader.queue("jobs").pop_messages(2)
            theirs = await other.queue("jobs").pop_messages(1)
            assert [m.value for m in mine + theirs] == [0, 1, 2]
            links = reader.links
            _close_links(node)
            await reader.barrier()
            assert reader.links > links  # a new link
            with pytest.raises(P.PermissionDenied, match="its session popped"):
                await reader.queue("jobs").give_back(theirs)  # another client's
            forged = dataclasses.replace(mine[0], value="forged")
            with pytest.raises(P.PermissionDenied, match="its session popped"):
                await reader.queue("jobs").give_back([forged])  # another value
            await reader.queue("jobs").give_back(mine)
        await node.barrier()
        assert await node.queue("jobs").pop_many(4) == [0, 1, 3]


async def test_a_give_back_of_elements_another_op_gives_back_is_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Two give-backs of one element under two sequence numbers, the first not yet
    applied when the second is read: the second is refused."""
    held: list[Any] = []
    refusal = ClientConnection.state_refusal

    def admitting_twice(self: ClientConnection, op: Any, view: Any) -> Any:
        code = op.code
        found = refusal(self, op, view)
        if code == ops.QUEUE_UNPOP_STAMPED and found is None and not held:
            held.append(op)
            op2 = type(op)(op.rid, op.seq + 1000, op.floor, code, op.args, op.timeout)
            held.append(refusal(self, op2, view))
        return found

    monkeypatch.setattr(ClientConnection, "state_refusal", admitting_twice)
    access = ClientAccess([ClientGrant("reader", READER, consume=["jobs"])])
    async with one_member(access) as node:
        await node.queue("jobs").push(0)
        async with connect([node.listen or ""], ("reader", READER)) as reader:
            taken = await reader.queue("jobs").pop_messages(1)
            await reader.queue("jobs").give_back(taken)
        assert isinstance(held[1], P.PermissionDenied) and "twice" in str(held[1])
        await node.barrier()
        assert await node.queue("jobs").pop_many(2) == [0]
