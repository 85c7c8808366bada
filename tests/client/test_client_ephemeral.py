"""A closing client disconnects the ephemeral subscriptions it started, so clients that
come and go (each subscribing a fresh id) leave no subscription behind to fill the
topic's ``max_subscribers``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from lazily_queue import Node
from lazily_queue.client import dialling as dialling_module
from tests.client.limits_cluster import limited_cluster
from tests.client.test_client_cluster import client_of, cluster_with_clients

pytestmark = pytest.mark.timeout(60)


def _subscribers(node: Node, topic: str) -> dict[str, Any]:
    core = node.view.topic(topic)
    return {} if core is None else core.subscriptions()


async def test_clients_that_come_and_go_leave_no_ephemeral_subscription() -> None:
    async with limited_cluster(1, produce=True, max_subscribers=3) as (c, addresses):
        for k in range(6):  # twice the cap: each client's subscription went with it
            async with client_of(addresses) as client:
                news = client.topic("news")
                await news.subscribe(f"dashboard-{k}", "ephemeral")
                await news.publish(k)
                assert await news.poll(f"dashboard-{k}") == k
        await c.settle()
        assert _subscribers(c.node(1), "news") == {}


async def test_a_closing_client_ends_only_the_ephemeral_subscriptions_it_holds() -> None:
    async with limited_cluster(1, produce=True) as (c, addresses):
        node = c.node(1)
        await node.topic("news").subscribe("taken", "ephemeral")
        async with client_of(addresses) as client:
            news = client.topic("news")
            await news.subscribe("mine", "ephemeral")
            await news.subscribe("taken", "ephemeral")  # already connected: taken over
            await news.subscribe("billing")  # durable: stays, connected
            await news.subscribe("gone", "ephemeral")
            await news.disconnect("gone")
            assert set(_subscribers(node, "news")) == {"mine", "taken", "billing"}
        await c.settle()
        left = _subscribers(node, "news")
        assert set(left) == {"billing"}
        assert left["billing"]["connected"]


async def test_a_closing_client_leaves_an_id_a_member_subscribed_after_it() -> None:
    async with limited_cluster(1, produce=True) as (c, addresses):
        node = c.node(1)
        async with client_of(addresses) as client:
            await client.topic("news").subscribe("lent", "ephemeral")
            await c.settle()
            await node.topic("news").subscribe("lent", "ephemeral")  # the member's now
        await c.settle()
        assert set(_subscribers(node, "news")) == {"lent"}


async def test_a_close_cancelled_while_it_ends_subscriptions_still_unlinks() -> None:
    async with limited_cluster(1, produce=True) as (_, addresses):
        client = client_of(addresses)
        await client.start()
        await client.topic("news").subscribe("mine", "ephemeral")
        closing = asyncio.ensure_future(client.close())
        await asyncio.sleep(0)  # the disconnect is on its way
        closing.cancel()
        await asyncio.gather(closing, return_exceptions=True)
        assert client.member is None  # unlinked all the same


async def test_a_client_closed_as_its_member_dies_still_ends_its_subscriptions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Closed between the death of its member and its next link, a client links again
    to end its ephemeral subscriptions: they would otherwise stay for good."""
    async with cluster_with_clients() as (c, addresses):
        client = client_of(addresses, prefer_leader=False)
        await client.start()
        await client.topic("news").subscribe("dashboard", "ephemeral")
        first = client.member
        assert first is not None
        real_dial = dialling_module.dial

        async def slow_dial(*args: Any, **options: Any) -> Any:
            await asyncio.sleep(0.3)  # the close comes before the next link
            return await real_dial(*args, **options)

        monkeypatch.setattr(dialling_module, "dial", slow_dial)
        await c.kill(first)
        await _until(lambda: client._link is None)
        await client.close()
        survivor = next(node for node in c.running if node.node_id != first)
        await survivor.barrier()
        assert _subscribers(survivor, "news") == {}


async def _until(predicate: Any, seconds: float = 10.0) -> None:
    async with asyncio.timeout(seconds):
        while not predicate():  # noqa: ASYNC110 - polls plain state
            await asyncio.sleep(0.01)
