"""Consumer groups on topics: ``topic.group(name)``, on the local and the replicated
backends alike."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from lazily_queue import (
    InvalidConfiguration,
    InvalidName,
    OffsetOutOfRange,
    ProposalRejected,
    TopicCell,
    UnsupportedOperation,
    admin,
    testing,
)
from lazily_queue.cells.group import GroupCell
from lazily_queue.metrics import NodeMetrics
from lazily_queue.reactive import effect
from lazily_queue.storage import LocalTopicStorage, StorageCapabilities
from lazily_queue.storage.remote import RemoteTopicStorage
from tests.clock import FakeClock


async def _share(t: TopicCell[Any], now: Any) -> tuple[GroupCell, GroupCell]:
    """Two groups of two members each over values 0..5; returns (billing, audit)."""
    await t.publish("before")
    billing = t.group("billing", visibility_timeout=10)
    audit = t.group("audit", visibility_timeout=10, start="head")
    await billing.declare()
    await audit.declare()
    seen: list[int] = []
    stop = effect(lambda: seen.append(billing.lag()), context=t.ctx)
    for value in range(6):
        await t.publish(value)
    assert billing.lag() == 6 and audit.lag() == 7
    assert seen[0] == 0 and seen[-1] == 6  # lag is a reader
    got: dict[str, list[Any]] = {"m1": [], "m2": []}
    for _ in range(3):
        for member in ("m1", "m2"):
            job = await billing.claim(member, now=now)
            got[member].append(job.value)
            assert job.item_id == job.value + 1  # item ids are topic offsets
            await billing.ack(member, job.delivery_id)
    assert sorted(got["m1"] + got["m2"]) == list(range(6))
    assert not set(got["m1"]) & set(got["m2"])
    assert billing.lag() == 0 and seen[-1] == 0
    # the other group still holds every element
    assert [p.value for p in audit.pending()] == ["before", *range(6)]
    stop.dispose()
    return billing, audit


async def _members_come_and_go(t: TopicCell[Any], audit: GroupCell, now: float,
                                later: Callable[[float], None] = lambda _: None) -> None:
    """A member leaves (its leases come back unstarted), another dies (leases expire);
    ``later(ms)`` moves the cluster's clock on (a reap never runs ahead of it)."""
    first = await audit.claim("a1", now=now)
    second = await audit.claim("a1", now=now)
    assert await audit.leave("a1") == 2
    assert await audit.leave("a1") == 0
    again = await audit.claim("a2", now=now)
    assert (again.item_id, again.attempt) == (first.item_id, 1)  # not counted
    await audit.claim("a2", now=now)  # a2 dies holding two
    assert audit.in_flight_len() == 2
    later(11_000)
    assert await audit.reap_expired(now + 11_000) == 2
    # back at the pending tail for the members still alive, the lapse counted
    tail = audit.pending()[-2:]
    assert [(p.item_id, p.attempts) for p in tail] == [(first.item_id, 1), (second.item_id, 1)]
    assert audit.lag() == 7  # nothing acked, nothing lost, nothing doubled


async def test_groups_on_the_local_backend() -> None:
    t: TopicCell[Any] = TopicCell(name="orders")
    billing, audit = await _share(t, 0.0)
    await _members_come_and_go(t, audit, 0.0)
    assert t.group("billing") is billing
    with pytest.raises(InvalidConfiguration, match="already open"):
        t.group("billing", visibility_timeout=99)
    with pytest.raises(UnsupportedOperation, match="fed by its topic"):
        await billing.push(1)
    with pytest.raises(OffsetOutOfRange, match=r"retains offsets 0\.\.7"):
        t.group("late", start=8)
    # the snapshot carries the groups
    restored: TopicCell[Any] = TopicCell.from_snapshot(t.snapshot(), name="orders")
    again = restored.group("audit", visibility_timeout=10)
    assert again.pending() == audit.pending() and again.in_flight() == audit.in_flight()
    await restored.publish("after")
    assert again.lag() == 8 and restored.group("billing", visibility_timeout=10).lag() == 1


async def test_groups_on_the_replicated_backend(wall: FakeClock) -> None:
    def later(ms: float) -> None:
        wall.now += ms / 1000

    async with testing.cluster(3, maintenance_interval=None) as c:
        leader = await c.leader()
        t = leader.topic("orders")
        billing, audit = await _share(t, None)
        follower = (await c.followers())[0]
        await c.settle()
        remote = follower.topic("orders").group("audit", visibility_timeout=10)
        assert remote.pending() == audit.pending()
        await _members_come_and_go(t, remote, follower.view.now, later)
        with pytest.raises(UnsupportedOperation, match="fed by its topic"):
            await billing.push(1)
        with pytest.raises(InvalidConfiguration, match="is group 'billing' of topic"):
            leader.work_queue("orders:billing")
        with pytest.raises(ProposalRejected, match="name_taken"):  # where it is not open
            await follower.work_queue("orders:billing").push(1)
        with pytest.raises(OffsetOutOfRange, match="past the tail"):
            await t.group("late", start=99).declare()
        metrics = NodeMetrics(follower)
        await c.settle()
        assert metrics.registry.get_sample_value(
            "lazily_queue_group_lag", {"name": "orders", "group": "audit"}) == 7
        assert follower.status()["topics"]["orders"]["groups"]["billing"]["lag"] == 0


async def test_a_negative_start_is_refused_by_group_on_every_backend() -> None:
    """Locally and on a node alike, at ``group()``; once a group exists its start is not
    used (as locally), so opening it again with one is no error."""
    local: TopicCell[Any] = TopicCell(name="orders")
    with pytest.raises(OffsetOutOfRange, match=r"offset -1 is before .* offsets 0\.\.0"):
        local.group("g", start=-1)
    async with testing.cluster(1) as c:
        node = await c.leader()
        t = node.topic("orders")
        await t.publish("a")
        with pytest.raises(OffsetOutOfRange, match=r"offset -1 is before .* offsets 0\.\.1") as e:
            t.group("g", start=-1)
        assert (e.value.offset, e.value.base, e.value.end) == (-1, 0, 1)
        group = t.group("g", start="head")  # nothing of the refused one is left open
        await group.declare()
        assert [p.value for p in group.pending()] == ["a"]
        node = await c.restart(node.node_id, fresh=True)  # new cells, the group applied
        await c.wait_for_leader()
        await node.barrier()
        assert node.topic("orders").group("g", start=-1).pending_len() == 1


async def test_groups_survive_a_restart_and_leave_with_their_topic() -> None:
    async with testing.cluster(1) as c:
        node = await c.leader()
        t = node.topic("orders")
        group = t.group("g")
        await group.declare()
        for value in "abc":
            await t.publish(value)
        job = await group.claim("m")
        node = await c.restart(node.node_id, fresh=True)
        await c.wait_for_leader()
        await node.barrier()  # the restarted member applied its log again
        group = node.topic("orders").group("g")
        assert [p.value for p in group.pending()] == ["b", "c"]
        assert [d.item_id for d in group.in_flight()] == [job.item_id]
        await node.topic("orders").publish("d")  # the restarted topic still feeds it
        assert group.lag() == 4
        await admin.delete(node, "topic", "orders")
        assert "orders:g" not in node.view.work_queues


def test_a_backend_without_groups_refuses_by_name() -> None:
    assert RemoteTopicStorage.capabilities.groups  # a client's topic has them too

    class Plain(LocalTopicStorage[Any]):
        __slots__ = ()
        capabilities = StorageCapabilities(sync=True)

    t: TopicCell[Any] = TopicCell(Plain(), name="news")
    with pytest.raises(UnsupportedOperation, match="news: Plain has no consumer groups"):
        t.group("g")


async def test_a_group_decodes_with_its_topic_serializer_on_both_backends() -> None:
    import json
    from dataclasses import dataclass

    from lazily_queue import serializer

    @dataclass
    class Order:
        n: int

    codec = serializer(lambda o: json.dumps({"n": o.n}), lambda s: Order(**json.loads(s)))
    local: TopicCell[Order] = TopicCell(name="orders", serializer=codec)
    async with testing.cluster(1) as c:
        replicated = (await c.leader()).topic("orders", serializer=codec)
        for t in (local, replicated):
            group = t.group("g", clock=(lambda: 0.0) if t is local else None)
            await group.declare()
            await t.publish(Order(7))
            job = await group.claim("m")
            assert job.value == Order(7)
            assert group.pending() == [] and group.in_flight()[0].value == Order(7)


async def test_bad_group_settings_are_refused_by_name_on_both_backends() -> None:
    async with testing.cluster(1) as c:
        for t in (TopicCell(name="orders"), (await c.leader()).topic("orders")):
            for bad, message in (({"visibility_timeout": "x"}, "visibility_timeout must be"),
                                 ({"max_deliveries": 0}, "max_deliveries must be"),
                                 ({"start": "middle"}, "start must be")):
                with pytest.raises(ValueError, match=message):
                    t.group("g", **bad)
            for name in ("", 5):  # the typed error of every other name check
                with pytest.raises(InvalidName, match="group name must be a non-empty str"):
                    t.group(name)  # type: ignore[arg-type]
            assert t.group("g").pending() == []  # nothing half-made
