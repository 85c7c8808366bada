"""Consumer groups of a topic with expiry: an element enters each group with its topic
deadline (its own ttl or the topic's age limit, the earlier) and is never delivered
after it, counted in the group's ``expired`` instead; once leased it no longer expires.
The same on the local and the replicated backends."""

from __future__ import annotations

from typing import Any

import pytest

from lazily_queue import TopicCell, testing
from lazily_queue.cells.group import GroupCell
from lazily_queue.reactive import effect
from tests.clock import FakeClock


async def _publish(t: TopicCell[Any]) -> None:
    """At t0 on a topic with max_age 10 s."""
    await t.publish("short", ttl=1.0)   # deadline +1
    await t.publish("plain")            # +10 (the topic's age limit)
    await t.publish("long", ttl=3600.0)  # +10: the age limit ends it first
    await t.publish("five", ttl=5.0)    # +5


async def _expire_in_groups(t: TopicCell[Any], clock: FakeClock, now: Any) -> list[GroupCell]:
    tail = t.group("tail", visibility_timeout=100)
    await tail.declare()
    await _publish(t)
    head = t.group("head", visibility_timeout=100, start="head")  # the retained ones
    await head.declare()
    seen: list[int] = []
    stop = effect(lambda: seen.append(tail.expired()), context=t.ctx)
    clock.now += 2
    for group in (tail, head):
        job = await group.poll("m", now)
        assert job is not None and job.value == "plain"  # "short" skipped
        assert group.expired() == 1 and group.lag() == 3
    assert seen[-1] == 1  # expired is a reader
    clock.now += 4  # t0 + 6: "five" is past its deadline, "long" is not
    long = await tail.poll("m", now)
    assert long is not None and long.value == "long"
    assert await tail.poll("m", now) is None
    assert tail.expired() == 2 and tail.lag() == 2  # nothing lost: 2 leased, 2 expired
    clock.now += 5  # t0 + 11: "long" is past its deadline but leased: it stays the group's
    await tail.nack("m", long.delivery_id)
    again = await tail.poll("m2", now)
    assert again is not None and (again.value, again.attempt) == ("long", 2)
    assert tail.expired() == 2
    stop.dispose()
    return [tail, head]


async def test_a_local_group_never_delivers_an_expired_element() -> None:
    clock = FakeClock()
    t: TopicCell[Any] = TopicCell(name="orders", max_age=10.0, clock=clock)
    await _expire_in_groups(t, clock, 0.0)  # leases on a logical clock, expiry on the topic's


async def test_a_local_group_without_expiry_keeps_every_element() -> None:
    t: TopicCell[Any] = TopicCell(name="orders")
    group = t.group("g")
    await t.publish("a")
    assert group.capabilities.expiry is False and group.expired() == 0
    job = await group.poll("m", 0.0)
    assert job is not None and job.value == "a"


async def test_a_replicated_group_never_delivers_an_expired_element(wall: FakeClock) -> None:
    async with testing.cluster(3, maintenance_interval=None) as c:
        leader = await c.leader()
        t = leader.topic("orders", max_age=10.0)
        tail, head = await _expire_in_groups(t, wall, None)
        await c.settle()
        follower = (await c.followers())[0]
        for name, group in (("tail", tail), ("head", head)):
            there = follower.topic("orders", max_age=10.0).group(name, visibility_timeout=100)
            assert there.expired() == group.expired()
            assert there.pending() == group.pending()


@pytest.mark.parametrize("steps", [(1, 1, 1), (5, -4, 2)])
async def test_a_local_group_from_the_head_acts_as_one_its_topic_fed(
        steps: tuple[int, int, int]) -> None:
    clock = FakeClock()
    t: TopicCell[Any] = TopicCell(name="orders", max_age=10.0, clock=clock)
    fed = t.group("fed", visibility_timeout=100)
    await fed.declare()
    for i in range(300):  # three stamps; every seventh element with a ttl of its own
        clock.now += steps[i // 100] if i % 100 == 0 else 0  # a wall clock may step back
        await (t.publish(i, ttl=4.0) if i % 7 == 0 else t.publish(i))
    stamps = [t.storage.stamp_of(o) for o in (0, 100, 200)]  # type: ignore[attr-defined]
    assert (stamps == sorted(stamps)) == (min(steps) > 0)
    head = t.group("head", visibility_timeout=100, start="head")
    await head.declare()
    assert head.pending() == fed.pending() and head.lag() == fed.lag() == 300
    for step in range(60):
        clock.now += 0.25  # past the age limit of some before the end
        got = [await group.poll(f"m{step % 3}", float(step)) for group in (fed, head)]
        assert got[0] == got[1]
        if got[0] is not None and step % 4 == 0:
            for group, job in zip((fed, head), got, strict=True):
                assert job is not None
                await group.nack(job.worker, job.delivery_id)
        assert [g.expired() for g in (fed, head)] == [fed.expired(), fed.expired()]
        assert head.pending() == fed.pending() and head.lag() == fed.lag()
    assert fed.expired() > 0  # the own ttls ran out on the way
    assert all(p.attempts for p in fed.pending())  # the age limit ended the unstarted
