"""A client with the produce permission may give one popped message back twice: its
give-backs are proposed unchecked, so the queue then holds the message's id twice. A
consume-only client's pop taking both copies gets both, and may give the element back
once."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from lazily_queue import ClientAccess, ClientGrant, Credentials, Node, PermissionDenied, connect

pytestmark = pytest.mark.timeout(60)

PRODUCER, CONSUMER = b"token-of-a-producer", b"token-of-a-consumer"


@pytest.fixture
async def member(short_tmp: Path) -> AsyncIterator[Node]:
    access = ClientAccess([
        ClientGrant("producer", PRODUCER, produce=["jobs"], consume=["jobs"]),
        ClientGrant("consumer", CONSUMER, consume=["jobs"]),
    ])
    node = Node(1, data_dir=None, durability="none", listen=f"unix://{short_tmp}/n1.sock",
                secret=b"the-cluster-secret", clients=access)
    async with node:
        await node.wait_for_leader()
        yield node


async def test_a_producer_gives_a_message_back_twice_and_a_consumer_pops_both_copies(
        member: Node) -> None:
    assert member.listen is not None
    jobs = member.queue("jobs")
    for value in ("a", "b"):
        await jobs.push(value)
    async with connect(member.listen, Credentials("producer", PRODUCER)) as producer:
        [taken] = await producer.queue("jobs").pop_messages(1)
        await producer.queue("jobs").give_back([taken])
        await producer.queue("jobs").give_back([taken])  # a second call: applied too
    await member.barrier()
    assert jobs.len() == 3
    async with connect(member.listen, Credentials("consumer", CONSUMER)) as consumer:
        queue = consumer.queue("jobs")
        both = await queue.pop_messages(3)
        assert [(m.id, m.value) for m in both] == [(taken.id, "a"), (taken.id, "a"),
                                                     (taken.id + 1, "b")]
        await queue.give_back(both[:1])
        with pytest.raises(PermissionDenied, match="only elements its session popped"):
            await queue.give_back(both[1:2])  # its session holds the element once
    await member.barrier()
    assert [m.value for m in await jobs.pop_messages(5)] == ["a"]
