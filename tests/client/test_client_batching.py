"""A member proposes the ops it read from one client together (``CLIENT_OPS``): fewer
proposals, the same results, each op answered and refused on its own."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from lazily_queue import MessageTooLarge, Node
from lazily_queue.client import batching
from lazily_queue.client import fair as fair_module
from lazily_queue.client import server as server_module
from lazily_queue.client.batching import PendingOp, group
from lazily_queue.replicated import ops
from tests.client.test_client_cluster import client_of, cluster_with_clients

pytestmark = pytest.mark.timeout(60)


def _leader_proposals(nodes: list[Node]) -> int:
    return sum(n.driver.replica.proposals for n in nodes)


async def test_a_burst_of_pushes_goes_out_in_few_proposals_in_order() -> None:
    async with cluster_with_clients() as (c, addresses), client_of(addresses) as client:
        q = client.queue("burst")
        await q.push(-1)  # declared, the link warm
        nodes = [c.node(i) for i in (1, 2, 3)]
        before = _leader_proposals(nodes)
        await asyncio.gather(*(q.push(i) for i in range(200)))
        proposed = _leader_proposals(nodes) - before
        assert proposed * 4 <= 200, proposed  # grouped, not 200
        await client.barrier()
        assert await q.pop_many(300) == [-1, *range(200)]


async def test_the_ops_of_one_frame_are_one_proposal_across_the_members_yields() -> None:
    """The member yields to its other work every YIELD_EVERY requests of a frame but
    proposes the frame's ops together (up to GROUP_OPS), not one group per yield."""
    assert server_module.YIELD_EVERY < 200 <= server_module.GROUP_OPS
    async with cluster_with_clients() as (c, addresses), client_of(addresses) as client:
        q = client.queue("frame")
        await q.push(-1)
        nodes = [c.node(i) for i in (1, 2, 3)]
        before = _leader_proposals(nodes)
        await asyncio.gather(*(q.push(i) for i in range(200)))  # one loop turn: one frame
        assert _leader_proposals(nodes) - before == 1
        await client.barrier()
        assert await q.pop_many(300) == [-1, *range(200)]


async def test_an_oversized_message_is_refused_alone_and_its_group_applies() -> None:
    async with cluster_with_clients() as (c, addresses), client_of(addresses) as client:
        q = client.queue("mixed")
        await q.push(b"")
        limit = c.node(1).driver.replica.config.max_message_bytes
        results = await asyncio.gather(
            *(q.push(b"x" * (limit + 1) if i == 5 else i) for i in range(10)),
            return_exceptions=True)
        assert isinstance(results[5], MessageTooLarge)
        assert [r for k, r in enumerate(results) if k != 5] == [None] * 9
        await client.barrier()
        assert await q.pop_many(20) == [b"", 0, 1, 2, 3, 4, 6, 7, 8, 9]


async def test_a_group_the_replica_refuses_is_proposed_one_op_at_a_time(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def unencodable(session: int, members: list[PendingOp]) -> list[Any]:
        return [session, object()]  # the replica refuses it: no value of the model

    monkeypatch.setattr(fair_module, "client_ops", unencodable)
    async with cluster_with_clients() as (_c, addresses), client_of(addresses) as client:
        q = client.queue("alone")
        await asyncio.gather(*(q.push(i) for i in range(20)))
        await client.barrier()
        assert await q.pop_many(30) == list(range(20))


def test_groups_keep_order_and_send_what_they_cannot_size_alone() -> None:
    def op(rid: int, code: int, *args: Any) -> PendingOp:
        return PendingOp(rid, rid, rid // 2, code, list(args), 1.0)

    pending = [op(1, ops.QUEUE_PUSH, "q", b"a" * 100),
               op(2, ops.QUEUE_PUSH, "q", {"k": "v" * 1900}),
               op(3, ops.QUEUE_POP, "q"), op(4, ops.QUEUE_PUSH, "q", "é" * 600),
               op(5, ops.QUEUE_PUSH, "q", b"b" * 2000), op(6, ops.QUEUE_PUSH, "q", b"c")]
    groups = group(pending, message_limit=2048, command_bytes=4096)
    assert [[o.rid for o in g] for g in groups] == [[1], [2], [3, 4], [5], [6]]
    assert batching.client_ops(9, groups[2]) == [
        9, 2, [3, ops.QUEUE_POP, "q"], [4, ops.QUEUE_PUSH, "q", "é" * 600]]


def test_a_group_answered_as_a_whole_answers_each_op_so() -> None:
    # A retried CLIENT_OPS whose kept result was given up is answered with one OpError.
    members = [PendingOp(rid, rid, 1, ops.QUEUE_POP, ["q"], 1.0) for rid in (1, 2)]
    answers: list[tuple[int, Any, BaseException | None]] = []
    done = batching.answer_each(members, lambda op, result, error: answers.append(
        (op.rid, result, error)))
    not_kept = ops.OpError("duplicate", "already applied; its result is no longer kept")
    done(not_kept, None)
    assert answers == [(1, not_kept, None), (2, not_kept, None)]
    answers.clear()
    done(["a", "b"], None)
    assert answers == [(1, "a", None), (2, "b", None)]


async def test_ops_waiting_for_a_members_slots_do_not_hold_back_those_read() -> None:
    """A member serving 4 requests of this client at once: the ops it read are proposed
    before it waits for a slot, so 64 pushes outstanding all complete."""
    from lazily_queue import ClientAccess, ClientGrant, testing
    from tests.client.test_client_cluster import TOKEN

    def options(node_id: str) -> testing.NodeOptions:
        grant = ClientGrant("web", TOKEN, produce=["*"], consume=["*"])
        return {"clients": ClientAccess([grant], listen=f"memory://slots-{node_id}",
                                        max_in_flight=4)}

    async with testing.cluster(3, node_options=options), client_of(
            [f"memory://slots-{i}" for i in (1, 2, 3)], max_in_flight=64) as client:
        q = client.queue("slots")
        await asyncio.wait_for(asyncio.gather(*(q.push(i) for i in range(64))), 30)
        await client.barrier()
        assert await q.pop_many(100) == list(range(64))
