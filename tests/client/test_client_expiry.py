"""Message expiry through a client: the TTL travels as an op field, the mirror expires
as the member does (both on the leader's clock)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from lazily_queue import (
    ClientAccess,
    ClientGrant,
    ClusterClient,
    Credentials,
    InvalidTtl,
    QueueCell,
    connect,
    testing,
)
from lazily_queue.core.queue import QueuePopError

pytestmark = pytest.mark.timeout(60)

TOKEN = b"token-of-the-expiry-tests"


@asynccontextmanager
async def cluster_with_clients() -> AsyncIterator[tuple[testing.Cluster, list[str]]]:
    prefix = "memory://expiry-clients"

    def options(node_id: str) -> testing.NodeOptions:
        access = ClientAccess([ClientGrant("web", TOKEN, produce=["*"], consume=["*"])],
                              listen=f"{prefix}-{node_id}")
        return {"clients": access, "maintenance_interval": None}

    async with testing.cluster(3, node_options=options) as c:
        yield c, [f"{prefix}-{i}" for i in range(1, 4)]


def client_of(addresses: list[str]) -> ClusterClient:
    return connect(addresses, Credentials("web", TOKEN), ping_interval=0.2, ping_timeout=1.0)


async def test_a_client_pushes_with_a_ttl_and_its_mirror_agrees(
        monkeypatch: pytest.MonkeyPatch) -> None:
    now = [time.time()]
    monkeypatch.setattr(time, "time", lambda: now[0])
    async with cluster_with_clients() as (c, addresses), client_of(addresses) as client:
        q: QueueCell[Any] = client.queue("orders", ttl=30.0)
        assert len(q) == 0  # start mirroring
        await q.push("short", ttl=1.0)
        await q.push("default")
        await q.push("kept", ttl=3600.0)
        with pytest.raises(InvalidTtl):
            await q.push("bad", ttl=float("nan"))
        now[0] += 31
        assert await q.pop() == "kept"
        assert await q.poll() is QueuePopError.Empty
        await client.barrier()
        assert q.len() == 0 and q.expired() == 2
        member = c.node(1).queue("orders")
        assert member.len() == 0 and member.expired() == 2


async def test_a_client_publishes_with_options_and_its_mirror_agrees(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from lazily_queue import LimitExceeded, Limits

    now = [time.time()]
    monkeypatch.setattr(time, "time", lambda: now[0])
    async with cluster_with_clients() as (c, addresses), client_of(addresses) as client:
        limits = Limits(max_length=2)
        t = client.topic("alerts", max_age=60.0, limits=limits)
        await t.subscribe("pager")
        first = await t.publish("a", ttl=1.0, msg_id="m", headers={"k": "v"})
        assert await t.publish("a", ttl=1.0, msg_id="m", headers={"k": "v"}) == first
        await t.publish("b")
        with pytest.raises(LimitExceeded):
            await t.publish("c", wait=False)
        now[0] += 1
        assert await t.publish("c") == 2  # "a" expired at the head: room
        member = (await c.leader()).topic("alerts", max_age=60.0, limits=limits)
        await c.settle()
        assert t.elements() == member.elements() == ["b", "c"]
        assert t.expired() == member.expired() == 1 and t.bytes() == 2
        assert await t.advance("pager") == "b"
