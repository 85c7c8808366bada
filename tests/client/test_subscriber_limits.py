"""The limits on topic subscribers and work-queue workers: their names follow the
object-name length rule, and a member caps the subscriptions of one topic. Both are
refused where they enter (a node's cells, a client's cells, a member serving a client)
with a typed error, before anything is proposed."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from lazily_queue import (
    InvalidName,
    Node,
    RequestRefused,
    TooManySubscribers,
    testing,
)
from lazily_queue.names import DEFAULT_MAX_SUBSCRIBERS, MAX_NAME_LENGTH
from lazily_queue.replicated import ops
from tests.client.limits_cluster import check_cap_setting, limited_cluster
from tests.client.test_client_cluster import client_of

pytestmark = pytest.mark.timeout(60)

LONG = "s" * (MAX_NAME_LENGTH + 1)


@asynccontextmanager
async def subscribers_cluster(max_subscribers: int | None = None, size: int = 1) -> AsyncIterator[
        tuple[testing.Cluster, list[str]]]:
    """``limited_cluster`` with ``max_subscribers`` (by default the default)."""
    caps = {} if max_subscribers is None else {"max_subscribers": max_subscribers}
    async with limited_cluster(size, produce=False, **caps) as found:
        yield found


def _subscribers(node: Node, topic: str) -> dict[str, Any]:
    core = node.view.topic(topic)
    return {} if core is None else core.subscriptions()


async def test_a_node_refuses_an_overlong_subscriber_or_worker_before_proposing() -> None:
    async with subscribers_cluster() as (c, _):
        node = c.node(1)
        topic, work = node.topic("t"), node.work_queue("w")
        await topic.publish(1)
        await work.push(1)
        applied = node.view.applied_ops
        when = datetime(2020, 1, 1, tzinfo=UTC)
        for start in ("tail", "head", 0, when):
            with pytest.raises(InvalidName, match=f"limit of {MAX_NAME_LENGTH}"):
                await topic.subscribe(LONG, start=start)
        with pytest.raises(InvalidName, match=f"limit of {MAX_NAME_LENGTH}"):
            await work.poll(LONG)
        with pytest.raises(InvalidName, match=f"limit of {MAX_NAME_LENGTH}"):
            await work.poll_many(LONG, 2)
        with pytest.raises(InvalidName, match=f"limit of {MAX_NAME_LENGTH}"):
            await work.claim(LONG, timeout=5)
        await node.barrier()
        assert node.view.applied_ops == applied + 1  # the barrier only
        assert _subscribers(node, "t") == {}
        longest = "s" * MAX_NAME_LENGTH  # at the limit: accepted
        await topic.subscribe(longest, start="head")
        assert await topic.poll(longest) == 1
        delivery = await work.poll(longest)
        assert delivery is not None and delivery.worker == longest


async def test_a_client_refuses_an_overlong_subscriber_or_worker_before_sending() -> None:
    async with subscribers_cluster() as (c, addresses), client_of(addresses) as client:
        topic, work = client.topic("t"), client.work_queue("w")
        await client.barrier()
        sent = client.session._next_seq
        with pytest.raises(InvalidName, match=f"limit of {MAX_NAME_LENGTH}"):
            await topic.subscribe(LONG)
        with pytest.raises(InvalidName, match=f"limit of {MAX_NAME_LENGTH}"):
            await work.poll(LONG)
        assert client.session._next_seq == sent  # nothing was sent
        assert _subscribers(c.node(1), "t") == {}


async def test_a_member_refuses_a_clients_overlong_subscriber_or_worker() -> None:
    async with subscribers_cluster() as (c, addresses), client_of(addresses) as client:
        client.topic("t")
        client.work_queue("w")
        await client.barrier()
        for code, args in ((ops.TOPIC_SUBSCRIBE, ["t", LONG, "durable"]),
                           (ops.TOPIC_SUBSCRIBE_AT, ["t", LONG, "durable", "head"]),
                           (ops.TOPIC_SUBSCRIBE_AT_TIME, ["t", LONG, "durable", 0]),
                           (ops.WORK_CLAIM, ["w", LONG, None]),
                           (ops.WORK_CLAIM_MANY, ["w", LONG, 5, None])):
            with pytest.raises(RequestRefused, match=f"limit of {MAX_NAME_LENGTH}"):
                await client.session.call(code, args, timeout=5)
        await client.barrier()  # the link still serves
        member = c.node(1)
        await member.barrier()
        assert _subscribers(member, "t") == {}


async def test_members_cap_the_subscriptions_of_a_topic() -> None:
    async with subscribers_cluster(max_subscribers=3, size=3) as (c, addresses), \
            client_of(addresses) as client:
        one, two = c.node(1), c.node(2)
        topic = one.topic("t")
        await topic.subscribe("a")
        await topic.subscribe("b", "ephemeral")
        await client.topic("t").subscribe("c")
        await c.settle()
        with pytest.raises(TooManySubscribers, match="max_subscribers=3") as refused:
            await topic.subscribe("d")
        assert refused.value.limit == 3
        assert "delete_subscriber" in str(refused.value)
        with pytest.raises(TooManySubscribers, match="max_subscribers=3") as on_client:
            await client.topic("t").subscribe("d", start="head")
        assert on_client.value.limit == 3
        with pytest.raises(TooManySubscribers, match="max_subscribers=3"):
            await client.session.call(ops.TOPIC_SUBSCRIBE_AT_TIME, ["t", "d", "durable", 0],
                                      timeout=5)
        with pytest.raises(TooManySubscribers, match="max_subscribers=3"):
            await two.topic("t").subscribe("d", "ephemeral")
        await topic.disconnect("a")
        await topic.subscribe("a")  # an existing subscription reconnects at the cap
        await two.topic("other").subscribe("d")  # the cap is per topic
        await topic.disconnect("b")  # an ephemeral one leaves: room again
        await c.settle()
        await client.topic("t").subscribe("d")
        await c.settle()
        assert sorted(_subscribers(two, "t")) == ["a", "c", "d"]


async def test_a_client_deletes_a_durable_subscriber_freeing_its_slot() -> None:
    async with subscribers_cluster(max_subscribers=2, size=3) as (c, addresses), \
            client_of(addresses) as client:
        member = c.node(2)
        await member.topic("t").subscribe("abandoned")
        await member.topic("t").publish("held")
        await member.topic("t").disconnect("abandoned")
        topic = client.topic("t")
        await topic.subscribe("live", start="tail")
        with pytest.raises(TooManySubscribers):
            await topic.subscribe("next")
        assert await topic.delete_subscriber("abandoned") is True
        assert await topic.delete_subscriber("abandoned") is False  # unknown now: no-op
        await topic.subscribe("next")
        await c.settle()
        assert sorted(_subscribers(member, "t")) == ["live", "next"]
        assert await member.topic("t").gc() == 1  # nothing holds "held" any more
        with pytest.raises(InvalidName, match=f"limit of {MAX_NAME_LENGTH}"):
            await topic.delete_subscriber(LONG)
        with pytest.raises(RequestRefused, match=f"limit of {MAX_NAME_LENGTH}"):
            await client.session.call(ops.TOPIC_DELETE_SUBSCRIBER, ["t", LONG], timeout=5)


async def test_the_subscriber_cap_is_a_node_option_and_a_config_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    check_cap_setting("max_subscribers", DEFAULT_MAX_SUBSCRIBERS, tmp_path, monkeypatch)
