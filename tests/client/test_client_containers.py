"""A client's op holding more lists, tuples, dicts and sets than one per 16 bytes of the
message limit is refused by its member before it is proposed, nothing applied: a
megabyte of empty lists held the member's event loop for over a second to check and
encode (its followers elected another leader) and took about 70 MB on every member.
Ops that hold many containers also group fewer to a proposal."""

from __future__ import annotations

import contextlib
import datetime
import uuid
from collections.abc import AsyncIterator
from decimal import Decimal

import pytest

from lazily_queue import Client, ClientAccess, ClientGrant, Credentials, Node, connect
from lazily_queue.client.batching import PendingOp, group
from lazily_queue.errors import MessageTooLarge
from lazily_queue.raft.values import CONTAINER_BYTES, containers
from lazily_queue.replicated import ops
from tests.client.one_member import TOKEN, one_member

pytestmark = pytest.mark.timeout(60)
_WHEN = datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC)


def test_containers_are_counted_at_every_level_and_counting_stops_past_the_limit() -> None:
    value = [[], {"a": [1, (2, {"b"})]}, "text", b"x", 3]
    assert containers(["q", value], 100) == 6
    assert containers(["q", b"x" * 1000, 7], 0) == 0
    assert containers(["q", [[] for _ in range(1000)]], 10) <= 1001
    scalars = [Decimal(1), uuid.UUID(int=1), datetime.date(2020, 1, 1), {"at": _WHEN}, 2.5]
    assert containers(["q", scalars, Decimal(2)], 100) == 7


@contextlib.asynccontextmanager
async def _client_of_a_small_member() -> AsyncIterator[tuple[Node, Client]]:
    """A member whose messages hold at most 64 KiB, and a client linked to it."""
    async with one_member(max_message_bytes=64 * 1024) as node:
        assert node.listen is not None
        async with connect(node.listen, Credentials("web", TOKEN), op_timeout=5) as client:
            yield node, client


async def test_a_push_of_too_many_decimals_is_refused_before_it_is_proposed() -> None:
    most = 64 * 1024 // CONTAINER_BYTES
    async with _client_of_a_small_member() as (node, client):
        q = client.queue("q")
        await q.push(0)  # declared, the session registered
        proposed = node.driver.replica.proposals
        with pytest.raises(MessageTooLarge, match=f"more than {most} lists.*decimals"):
            await q.push([Decimal("1.5")] * most)  # and the list holding them
        assert node.driver.replica.proposals == proposed
        await q.push([Decimal("1.5")] * (most - 1))
        await node.barrier()
        held = node.view.queue("q").elements()  # type: ignore[union-attr]
        assert held[0] == 0 and len(held[1]) == most - 1


async def test_a_push_of_too_many_containers_is_refused_and_a_flat_one_taken() -> None:
    most = 64 * 1024 // CONTAINER_BYTES
    async with _client_of_a_small_member() as (node, client):
        q = client.queue("q")
        with pytest.raises(MessageTooLarge, match=f"more than {most} lists, tuples, "
                           "dicts and sets") as caught:
            await q.push([[] for _ in range(most + 1)])
        assert caught.value.limit == 64 * 1024
        await q.push([[] for _ in range(most - 1)])  # and the list holding them
        await q.push(list(range(10_000)))
        assert client.links == 1
        await node.barrier()
        assert [len(v) for v in node.view.queue("q").elements()] == [  # type: ignore[union-attr]
        most - 1, 10_000]


async def test_a_give_back_of_a_take_holding_more_containers_than_a_push_is_taken() -> None:
    access = ClientAccess([ClientGrant("web", TOKEN, produce=["q"], consume=["q"])])
    async with one_member(access, max_message_bytes=64 * 1024) as node:
        assert node.listen is not None
        async with connect(node.listen, Credentials("web", TOKEN), op_timeout=5) as client:
            q = client.queue("q")
            value = [[] for _ in range(1000)]
            for _ in range(8):  # 8,008 containers in all, a push may hold 4,096
                await q.push(value)
            taken = await q.pop_messages(8)
            assert len(taken) == 8
            await q.give_back(taken)
        await node.barrier()
        assert node.view.queue("q").len() == 8  # type: ignore[union-attr]


def test_ops_holding_many_containers_group_by_their_count() -> None:
    many = [PendingOp(rid, rid, 0, ops.QUEUE_PUSH, ["q", [[]] * 1000], 5.0, 1001)
            for rid in range(1, 9)]
    groups = group(many, message_limit=1 << 20, command_bytes=64 * 1024)
    assert [len(g) for g in groups] == [2, 2, 2, 2]  # 16 KB each against a 32 KB share
    flat = [PendingOp(rid, rid, 0, ops.QUEUE_PUSH, ["q", list(range(1000))], 5.0, 1)
            for rid in range(1, 9)]
    assert len(group(flat, message_limit=1 << 20, command_bytes=64 * 1024)) == 1
