"""Stopping a node (or losing it in a test cluster) fails every call waiting on it.

Hundreds of waiters of every kind (pops, batch pops, deliveries, claims, streams,
advances, pushes waiting for room, first operations still declaring their object,
operations in flight) end with ``NodeNotRunning`` when their node stops; none is left
waiting. ``asyncio.wait_for`` below only detects a hang: its bound is not a timing
assertion.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from lazily_queue import NodeNotRunning, testing
from lazily_queue.node import Node

#: Waiters of each kind per round.
EACH = 40
#: A generous bound that only a hang reaches.
HANG = 60.0


async def _quiet(node: Node) -> None:
    """Wait until every operation proposed on ``node`` has been answered and the
    callers had a turn of the loop to start waiting again."""
    while node.driver.replica.pending:
        await node.driver.next_step()
    for _ in range(3):
        await node.driver.next_step()


async def _drain(jobs: Any, worker: str) -> None:
    async for job in jobs.deliveries(worker):
        async with job:
            pass


async def _stream(topic: Any, subscriber: str) -> None:
    async for _ in topic.stream(subscriber):
        pass


def _waiters(node: Node, tag: str) -> dict[str, list[Callable[[], Awaitable[Any]]]]:
    """Calls that can only end by the node stopping (nothing will ever arrive)."""
    empty = node.queue(f"empty-{tag}")
    full = node.queue(f"full-{tag}", capacity=1)
    jobs = node.work_queue(f"jobs-{tag}")
    topic = node.topic(f"news-{tag}")
    return {
        "pop": [empty.pop for _ in range(EACH)],
        "pop_many": [lambda: empty.pop_many(8) for _ in range(EACH)],
        "async for": [lambda: _consume(empty) for _ in range(EACH)],
        "push waiting for room": [lambda i=i: full.push(i) for i in range(EACH)],
        "claim": [lambda i=i: jobs.claim(f"c{i}") for i in range(EACH)],
        "deliveries": [lambda i=i: _drain(jobs, f"d{i}") for i in range(EACH)],
        "stream": [lambda i=i: _stream(topic, f"s{i}") for i in range(EACH)],
        "advance": [lambda i=i: topic.advance(f"a{i}") for i in range(EACH)],
    }


async def _consume(queue: Any) -> None:
    async for _ in queue:
        pass


async def _prepare(node: Node, tag: str) -> None:
    """Objects the waiters use, declared; the bounded queue full; subscribers known; the
    topic the racing publishes go to (not the waiters': the node's last step may commit
    them, a member alone at once)."""
    await node.queue(f"full-{tag}", capacity=1).push("occupant")
    await node.topic(f"racing-{tag}").publish("declared")
    topic = node.topic(f"news-{tag}")
    await asyncio.gather(
        *(topic.subscribe(f"{kind}{i}") for kind in "sa" for i in range(EACH)),
        node.work_queue(f"jobs-{tag}").storage.declare(),  # type: ignore[attr-defined]
        node.queue(f"empty-{tag}").storage.declare(),  # type: ignore[attr-defined]
    )


async def _round(node: Node, tag: str, *, settle_first: bool) -> None:
    await _prepare(node, tag)
    waiting = {
        kind: [asyncio.ensure_future(call()) for call in calls]
        for kind, calls in _waiters(node, tag).items()
    }
    if settle_first:  # every waiter has polled, found nothing, and waits
        await _quiet(node)
    # Operations still on their way when the node stops: first uses of fresh objects
    # (their declaration) and ordinary operations.
    racing = [asyncio.ensure_future(node.queue(f"fresh-{tag}-{i}").push(i))
              for i in range(EACH)]
    racing += [asyncio.ensure_future(node.topic(f"racing-{tag}").publish(i))
               for i in range(EACH // 2)]
    await asyncio.sleep(0)
    await node.stop()

    everything = [*itertools.chain(*waiting.values()), *racing]
    await asyncio.wait_for(asyncio.gather(*everything, return_exceptions=True), HANG)
    for kind, tasks in waiting.items():
        outcomes = [type(t.exception()).__name__ for t in tasks]
        assert outcomes == ["NodeNotRunning"] * len(tasks), (kind, outcomes)
    for task in racing:  # committed before the stop, or failed by it
        assert task.exception() is None or isinstance(task.exception(), NodeNotRunning)

    # Later calls fail at once too, declarations included.
    with pytest.raises(NodeNotRunning):
        await asyncio.wait_for(node.queue(f"later-{tag}").push(1), HANG)
    with pytest.raises(NodeNotRunning):
        await asyncio.wait_for(node.queue(f"empty-{tag}").pop(), HANG)


@pytest.mark.parametrize("size", [1, 3])
async def test_stopping_a_node_fails_every_waiter_repeatedly(size: int) -> None:
    async with testing.cluster(size) as c:
        for round_ in range(4):
            node = (await c.followers())[0] if size > 1 else c.node(1)
            await _round(node, f"{round_}", settle_first=round_ % 2 == 0)
            await c.restart(node.node_id)  # the same Node: its cells work again
            await c.wait_for_leader()
            q = node.queue(f"empty-{round_}")
            await q.push("after restart")
            assert await asyncio.wait_for(q.pop(), HANG) == "after restart"


async def test_losing_the_leader_fails_its_waiters() -> None:
    async with testing.cluster(3) as c:
        leader = await c.leader()
        q = leader.queue("orders")
        pops = [asyncio.ensure_future(q.pop()) for _ in range(200)]
        await _quiet(leader)
        await c.kill(leader.node_id)
        await asyncio.wait_for(asyncio.gather(*pops, return_exceptions=True), HANG)
        assert all(isinstance(p.exception(), NodeNotRunning) for p in pops)
        survivor = await c.wait_for_leader()
        await survivor.queue("orders").push("still served")
        assert await survivor.queue("orders").pop() == "still served"



def _member(name: str) -> Node:
    return Node(1, data_dir=None, durability="none", listen=f"memory://{name}", secret="s")


async def test_stopping_right_after_a_break_gives_the_prefetched_elements_back() -> None:
    """Loops that broke out of ``async for x in q`` and ``deliveries()`` just before the
    node stops: their prefetched elements go back to the head and their prefetched
    leases are released (their finalizers would run after the stop)."""
    node = _member("stop-after-break")
    async with node:
        await node.wait_for_leader()
        queue, jobs = node.queue("q"), node.work_queue("w")
        await queue.push_many(list(range(10)))
        await jobs.push_many(list(range(10)))
        async for _ in queue:
            break
        async for job in jobs.deliveries("w1"):  # prefetches leases
            await job.ack()
            break
    assert (queue.len(), queue.head()) == (9, 1)
    assert (jobs.pending_len(), jobs.in_flight_len()) == (9, 0)  # the leases released


async def test_elements_given_back_by_the_iterator_are_not_given_back_again() -> None:
    """The iterator's finalizer gives back while the node runs on (here: another loop
    keeps it busy); the stop that follows does not give them back a second time, and
    the acks of the other loop's last jobs commit."""
    node = _member("stop-after-two-breaks")
    async with node:
        await node.wait_for_leader()
        queue, jobs = node.queue("q"), node.work_queue("w")
        await queue.push_many(list(range(10)))
        await jobs.push_many(list(range(3)))
        async for _ in queue:
            break
        done = 0
        async for job in jobs.deliveries("w1"):
            async with job:
                done += 1
            if done == 3:
                break
    assert (queue.len(), queue.head()) == (9, 1)
    assert (jobs.pending_len(), jobs.in_flight_len()) == (0, 0)
