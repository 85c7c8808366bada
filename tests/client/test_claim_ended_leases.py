"""A claim answered after its leases ended (reaped or settled once the claim applied:
entries applied behind it before its caller ran, or its answer lost and a retry answered
from the session's kept results after a failover) hands out only the leases still held,
on a member and through a client, as ``deliveries()`` does: it never hands out a lease
whose ack is refused at once. Before, ``claim_many`` returned them."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from lazily_queue import testing
from lazily_queue.client import server as server_module
from lazily_queue.replicated import ops as C
from lazily_queue.storage.raft_work_queue import RaftWorkQueueStorage
from tests.client.test_client_cluster import client_of, cluster_with_clients

pytestmark = pytest.mark.timeout(60)


def _ago() -> float:
    """A claim time whose leases (5 s) lapsed a minute ago by the leader's clock (whole
    milliseconds, as a node takes it): the next reap ends them."""
    return float(int(time.time() * 1000) - 65_000)


def _leases(result: Any) -> bool:
    """Whether ``result`` answers a claim that leased items."""
    return (type(result) is list and len(result) == 2 and type(result[0]) is list
            and bool(result[0]) and type(result[0][0]) is dict and "delivery_id" in result[0][0])


async def test_a_member_claim_reaped_before_its_caller_runs_hands_out_no_lease() -> None:
    async with testing.cluster(1) as cluster:
        jobs = (await cluster.leader()).work_queue("w", visibility_timeout=5.0)
        await jobs.push_many(["a", "b", "c"])
        now = _ago()
        claimed, reaped = await asyncio.gather(  # one entry: the reap applies next
            jobs.claim_many("w1", 2, now=now, timeout=0), jobs.reap_expired())
        assert reaped == 2
        # a and b ended (back at the tail, an attempt counted): it claimed again
        assert [(d.value, d.attempt) for d in claimed] == [("c", 1), ("a", 2)]
        assert [d.value for d in jobs.in_flight()] == ["c", "a"]
        assert [d.value for d in jobs.pending()] == ["b"]


async def test_a_client_claim_answered_after_its_leases_were_reaped_hands_them_not_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with cluster_with_clients() as (c, addresses), client_of(addresses) as client:
        jobs = client.work_queue("w", visibility_timeout=5.0)
        await jobs.push_many(["a", "b"])
        jobs.pending_len()  # the first read starts mirroring it
        await client.barrier()
        assert jobs.pending_len() == 2
        member = c.node(1).work_queue("w", visibility_timeout=5.0)
        original = server_module.ClientServer._answer
        reaping: list[asyncio.Task[int]] = []

        async def reap_then_drop(server: Any, conn: Any) -> int:
            reaped = await member.reap_expired()
            server._release(conn)
            conn.close()  # the claim's answer is lost with its link
            return reaped

        def answer_after_a_reap(self: Any, conn: Any, rid: int, result: Any,
                                error: Any) -> None:
            if not reaping and _leases(result):  # reaped before the claim is retried
                reaping.append(asyncio.ensure_future(reap_then_drop(self, conn)))
                return
            original(self, conn, rid, result, error)

        monkeypatch.setattr(server_module.ClientServer, "_answer", answer_after_a_reap)
        claimed = await jobs.claim_many("w1", 5, now=_ago())
        # the reap here, or the leader's maintenance round before it (both leases long due)
        assert reaping and await reaping[0] in (0, 2)
        # the retry's answer named the leases reaped meanwhile: it claimed again
        assert [(d.value, d.attempt) for d in claimed] == [("a", 2), ("b", 2)]


async def test_a_claim_made_again_gets_what_is_left_of_its_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bounds: list[float] = []
    original_call, original_live = RaftWorkQueueStorage._call, RaftWorkQueueStorage._live

    async def slow_call(self: Any, code: int, args: list[Any], timeout: float | None,
                        on_orphan: Any = None) -> Any:
        if code in (C.WORK_CLAIM, C.WORK_CLAIM_MANY):
            bounds.append(self.bound(timeout))
            await asyncio.sleep(0.4)  # a slow commit
        return await original_call(self, code, args, timeout, on_orphan)

    def ended_first(self: Any, leased: list[Any]) -> list[Any]:
        # the first claim's answer names leases ended since: it claims again
        return [] if len(bounds) == 1 else original_live(self, leased)

    monkeypatch.setattr(RaftWorkQueueStorage, "_call", slow_call)
    monkeypatch.setattr(RaftWorkQueueStorage, "_live", ended_first)
    async with testing.cluster(1) as cluster:
        jobs = (await cluster.leader()).work_queue("w", visibility_timeout=5.0)
        await jobs.push_many(["a", "b", "c"])
        claimed = await jobs.claim_many("w1", 1)
        assert [d.value for d in claimed] == ["b"]
        # the op bound (the node's op_timeout) bounds both claims together
        assert len(bounds) == 2 and bounds[1] <= bounds[0] - 0.35
