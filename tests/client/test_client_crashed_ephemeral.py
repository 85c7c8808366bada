"""The ephemeral subscriptions of a client process that was killed are removed once no
member has refreshed its session for the grace, freeing their ``max_subscribers``
slots; a live client, idle or relinked to another member, keeps its own."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from lazily_queue import ClientAccess, ClientGrant, Credentials, Node, connect, testing
from lazily_queue.client import liveness
from lazily_queue.client.cluster import ClusterClient
from lazily_queue.core.topic import SubscribeOutcome
from lazily_queue.replicated import ephemeral_owners

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

ROOT = Path(__file__).resolve().parents[2]
TOKEN = b"token-of-the-web-tier"
GRACE_MS = 1_500
#: A client process: links each subscriber of argv[2:] as its own client, subscribes
#: it to "news" as ephemeral, says "ready" and waits to be killed.
CLIENT_PROCESS = """
import asyncio, sys
from lazily_queue import Credentials, connect

async def main():
    addresses = sys.argv[1].split(",")
    clients = []
    for subscriber in sys.argv[2:]:
        client = connect(addresses, Credentials("web", {token!r}), ping_interval=0.2,
                         ping_timeout=1.0)
        await client.start()
        await client.topic("news").subscribe(subscriber, "ephemeral")
        clients.append(client)
    print("ready", flush=True)
    await asyncio.sleep(3600)

asyncio.run(main())
""".replace("{token!r}", repr(TOKEN))


@pytest.fixture(autouse=True)
def short_grace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ephemeral_owners, "GRACE_MS", GRACE_MS)
    monkeypatch.setattr(liveness, "REFRESH_INTERVAL", 0.3)
    monkeypatch.setattr(liveness, "TICK", 0.1)


@asynccontextmanager
async def clients_cluster(tmp: Path, **caps: int) -> AsyncIterator[
        tuple[testing.Cluster, list[str]]]:
    """Three members, each serving client "web" on a Unix socket of its own."""
    def options(node_id: str) -> testing.NodeOptions:
        grant = ClientGrant("web", TOKEN, produce=["*"], consume=["*"])
        found: dict[str, Any] = {
            "clients": ClientAccess([grant], listen=f"unix://{tmp}/c{node_id}.sock"), **caps}
        return found  # type: ignore[return-value]

    async with testing.cluster(3, node_options=options) as c:
        yield c, [f"unix://{tmp}/c{i}.sock" for i in (1, 2, 3)]


async def crashed_clients(addresses: list[str], *subscribers: str) -> None:
    """Run a client process subscribing ``subscribers`` and SIGKILL it once it did."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [str(ROOT), str(ROOT / "transports"), os.environ.get("PYTHONPATH")])))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", CLIENT_PROCESS, ",".join(addresses), *subscribers,
        stdout=asyncio.subprocess.PIPE, env=env)
    try:
        assert proc.stdout is not None
        async with asyncio.timeout(60):
            assert await proc.stdout.readline() == b"ready\n"
    finally:
        proc.kill()
        await proc.wait()


def subscribers(node: Node) -> set[str]:
    topic = node.view.topic("news")
    return set() if topic is None else set(topic.subscriptions())


async def until(predicate: Any, seconds: float = 30.0) -> None:
    async with asyncio.timeout(seconds):
        while not predicate():  # noqa: ASYNC110 - polls plain state
            await asyncio.sleep(0.05)


def web(addresses: list[str], **options: Any) -> ClusterClient:
    return connect(addresses, Credentials("web", TOKEN), ping_interval=0.2, ping_timeout=1.0,
                   **options)


async def test_killed_clients_lose_their_ephemeral_subscriptions_and_free_the_slots(
        short_tmp: Path) -> None:
    async with clients_cluster(short_tmp, max_subscribers=4) as (c, addresses):
        await crashed_clients(addresses, *(f"worker-{k}" for k in range(1, 5)))
        node = c.node(1)
        await node.barrier()
        assert subscribers(node) == {"worker-1", "worker-2", "worker-3", "worker-4"}
        await until(lambda: subscribers(node) == set())
        async with web(addresses) as client:
            news = client.topic("news")
            assert await news.subscribe("worker-5", "ephemeral") is SubscribeOutcome.Subscribed


async def test_a_live_idle_client_keeps_its_ephemeral_subscription_past_the_grace(
        short_tmp: Path) -> None:
    async with clients_cluster(short_tmp) as (c, addresses), web(addresses) as client:
        await client.topic("news").subscribe("live", "ephemeral")
        await crashed_clients(addresses, "crashed")
        node = c.node(1)
        await until(lambda: subscribers(node) == {"live"})  # the reaper ran
        await asyncio.sleep(3 * GRACE_MS / 1000)  # idle for three graces more
        await node.barrier()
        assert subscribers(node) == {"live"}


async def test_a_client_relinked_to_another_member_keeps_its_ephemeral_subscription(
        short_tmp: Path) -> None:
    async with clients_cluster(short_tmp) as (c, addresses), \
            web(addresses, prefer_leader=False) as client:
        await client.topic("news").subscribe("moving", "ephemeral")
        first = client.member
        assert first is not None
        await c.kill(first)
        await until(lambda: client.member not in (None, first))
        await crashed_clients(addresses, "crashed")
        node = next(node for node in c.running if node.node_id != first)
        await until(lambda: subscribers(node) == {"moving"})  # the reaper ran
        await asyncio.sleep(3 * GRACE_MS / 1000)
        await node.barrier()
        assert subscribers(node) == {"moving"}
        assert client.member not in (None, first)
