"""A client with the produce permission may give one popped message back twice: its
give-backs are proposed unchecked, so the queue then holds the message's id twice. A
consume-only client's pop taking both copies gets both, and gives the element back once:
a give-back naming both copies (its own, as an iteration's rest, or an explicit one) is
admitted by its member as a give-back of one copy, where the first copy was, so the other
elements of it go back too; a rest given back in parts keeps both copies in one part. A
member's own iteration gives back both copies (unchecked)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from lazily_queue import ClientAccess, ClientGrant, Credentials, Node, PermissionDenied, connect
from lazily_queue.client.popped import one_copy_each
from lazily_queue.replicated import ops as C
from lazily_queue.replicated.session_popped import SessionPopped

pytestmark = pytest.mark.timeout(60)

PRODUCER, CONSUMER = b"token-of-a-producer", b"token-of-a-consumer"
BIG = 450_000  # three are over one operation's 1 MiB, two are not


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


async def _doubled(member: Node, values: list[Any]) -> None:
    """``member``'s queue "jobs" holding ``values`` with the third twice (a producer's
    give-back applied twice): v0, v1, v2, v2, v3, ..."""
    await member.queue("jobs").push_many(values)
    assert member.listen is not None
    async with connect(member.listen, Credentials("producer", PRODUCER)) as producer:
        queue = producer.queue("jobs")
        taken = await queue.pop_messages(3)
        await queue.give_back(taken[2:])
        await queue.give_back(taken[2:])
        await queue.give_back(taken[:2])
    await member.barrier()


async def _held(member: Node) -> list[tuple[int, Any]]:
    return [(m.id, m.value) for m in await member.queue("jobs").pop_messages(10)]


async def test_a_consume_only_iteration_gives_back_a_rest_holding_both_copies(
        member: Node) -> None:
    await _doubled(member, ["v", "w", "x", "y"])
    assert member.listen is not None
    async with connect(member.listen, Credentials("consumer", CONSUMER)) as consumer:
        async with contextlib.aclosing(consumer.queue("jobs").messages(prefetch=8)) as it:
            async for m in it:
                assert m.value == "v"
                break  # w, x, x, y go back: x once, as its session's record holds it
    await member.barrier()
    assert await _held(member) == [(1, "w"), (2, "x"), (3, "y")]


async def test_a_consume_only_give_back_of_both_copies_gives_one_back(member: Node) -> None:
    await _doubled(member, ["v", "w", "x", "y"])
    assert member.listen is not None
    async with connect(member.listen, Credentials("consumer", CONSUMER)) as consumer:
        queue = consumer.queue("jobs")
        taken = await queue.pop_messages(5)
        assert [m.value for m in taken] == ["v", "w", "x", "x", "y"]
        await queue.give_back(taken[1:])
        with pytest.raises(PermissionDenied, match="only elements its session popped"):
            await queue.give_back(taken[2:3])  # given back once already
    await member.barrier()
    assert await _held(member) == [(1, "w"), (2, "x"), (3, "y")]


async def test_a_consume_only_rest_in_parts_keeps_both_copies_in_one_part(
        member: Node) -> None:
    values = [bytes([i]) * BIG for i in range(4)]  # the rest, 4 of them, is over 1 MiB
    await _doubled(member, values)
    assert member.listen is not None
    async with connect(member.listen, Credentials("consumer", CONSUMER)) as consumer:
        async with contextlib.aclosing(consumer.queue("jobs").messages(prefetch=8)) as it:
            async for m in it:
                assert m.id == 0
                break  # cut in the middle, 1's part was refused: its copy was given back
    await member.barrier()
    assert [(i, v[0]) for i, v in await _held(member)] == [(1, 1), (2, 2), (3, 3)]


async def test_a_member_iteration_gives_back_both_copies(member: Node) -> None:
    await _doubled(member, ["v", "w", "x", "y"])
    async with contextlib.aclosing(member.queue("jobs").messages(prefetch=8)) as it:
        async for m in it:
            assert m.value == "v"
            break  # a member gives back unchecked: both copies
    assert await _held(member) == [(1, "w"), (2, "x"), (2, "x"), (3, "y")]


def test_one_copy_each_keeps_the_copy_the_record_holds_where_the_first_copy_was() -> None:
    popped = SessionPopped(checking=True)
    runs = [[2, 1, 5], [2, 1, 5], [3, 1, 5]]
    popped.applied(7, 1, C.QUEUE_POP_STAMPED, ["q", 3], [["x", "x2", "y"], runs])
    record = popped.of(7)
    given = ["q", ["x2", "x", "y"], runs]  # the second copy under another value, first
    assert one_copy_each(record, C.QUEUE_UNPOP_STAMPED, given) == [
        "q", ["x", "y"], [[2, 2, 5]]]
    assert one_copy_each(record, C.QUEUE_UNPOP_STAMPED, ["q", ["x", "y"], runs[1:]]) is None
    assert one_copy_each(None, C.QUEUE_UNPOP_STAMPED, given) == [  # held nowhere: refused
        "q", ["x2", "y"], [[2, 2, 5]]]
