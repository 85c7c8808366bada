"""A topic's consumer groups through clients: joined and consumed as on a member,
mirrored as they are fed, each group seeing every element, members on clients and on
members, failover without losing or doubling an element, the topic's consume
permission."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from lazily_queue import PermissionDenied
from lazily_queue.reactive import Effect
from lazily_queue.replicated.client_sessions import new_session_id
from tests.client.test_client_cluster import (
    client_of,
    cluster_with_clients,
    kill_its_member_midway,
)

pytestmark = pytest.mark.timeout(60)


async def test_a_client_joins_a_group_and_its_lag_follows_the_topic() -> None:
    async with cluster_with_clients() as (c, addresses), client_of(addresses) as client:
        topic = client.topic("orders")
        assert topic.end_offset() == 0  # the topic is mirrored too: its ops replay here
        group = topic.group("billing", visibility_timeout=5)
        lags: list[int] = []
        effect = Effect(lambda: lags.append(group.lag()), context=group.ctx)
        await group.declare()
        await c.node(3).topic("orders").group("audit").declare()  # replayed in the mirror
        await client.barrier()
        audit = topic.group("audit")
        assert audit.lag() == 0  # mirrored from here on, as the member feeds it
        member_topic = c.node(2).topic("orders")
        for n in range(3):
            await member_topic.publish({"order": n})  # published on a member, fed here
        await client.barrier()
        assert group.lag() == 3 and lags[-1] == 3  # the reader reran as the feed applied
        assert topic.end_offset() == 3 and audit.lag() == 3  # fed once, by the member
        assert [p.value for p in group.pending()] == [{"order": n} for n in range(3)]
        first = await group.claim("m1")
        assert first is not None and first.item_id == 0  # item ids are topic offsets
        await group.nack("m1", first.delivery_id)  # back for another try
        values: list[Any] = []
        deliveries = group.deliveries("m1", prefetch=2)
        async for job in deliveries:
            async with job:
                values.append(job.value["order"])
            if len(values) == 3:
                break
        await deliveries.aclose()
        await client.barrier()
        assert sorted(values) == [0, 1, 2] and group.lag() == 0 and lags[-1] == 0
        effect.dispose()
        status = c.node(1).status()["topics"]["orders"]["groups"]["billing"]
        assert status["lag"] == 0


async def test_every_group_gets_every_element_shared_by_clients_and_members() -> None:
    async with cluster_with_clients() as (c, addresses), client_of(addresses) as one, \
            client_of(addresses[::-1]) as two:
        billing_one = one.topic("orders").group("billing")
        billing_two = two.topic("orders").group("billing")
        audit = one.topic("orders").group("audit")
        for g in (billing_one, billing_two, audit):
            await g.declare()
        billing_member = c.node(3).topic("orders").group("billing")
        producer = one.topic("orders")
        for n in range(30):
            await producer.publish(n)
        got: dict[str, list[int]] = {"one": [], "two": [], "member": [], "audit": []}

        def done(name: str) -> bool:
            if name == "audit":
                return len(got["audit"]) == 30
            return len(got["one"]) + len(got["two"]) + len(got["member"]) == 30

        async def consume(name: str, g: Any) -> None:
            while not done(name):
                job = await g.poll(name)
                if job is None:
                    await asyncio.sleep(0.01)  # the others hold the rest until acked
                    continue
                got[name].append(job.value)
                await g.ack(name, job.delivery_id)

        await asyncio.gather(consume("one", billing_one), consume("two", billing_two),
                             consume("member", billing_member), consume("audit", audit))
        billing = got["one"] + got["two"] + got["member"]
        assert sorted(billing) == list(range(30)), "each element once to the group"
        assert sorted(got["audit"]) == list(range(30)), "another group sees every element"
        assert sum(1 for k in ("one", "two", "member") if got[k]) > 1
        await one.barrier()
        assert billing_one.lag() == 0 and audit.lag() == 0


async def test_a_dead_members_lease_is_redelivered_and_a_leaving_one_hands_back() -> None:
    async with cluster_with_clients() as (_c, addresses), client_of(addresses) as client, \
            client_of(addresses) as other:
        topic = client.topic("orders")
        group = topic.group("billing", visibility_timeout=3)
        await group.declare()
        for n in range(3):
            await topic.publish(n)
        dead = await group.claim("crashed")  # this member never settles it
        gone = await group.claim("leaving")
        assert dead is not None and gone is not None
        assert await group.leave("leaving") == 1  # back at once, unstarted
        survivor = other.topic("orders").group("billing", visibility_timeout=3)
        seen: list[int] = []
        async with asyncio.timeout(20):  # a hang detector: the leader reaps the lease
            while len(seen) < 3:
                job = await survivor.claim("survivor")
                seen.append(job.value)
                await survivor.ack("survivor", job.delivery_id)
        assert sorted(seen) == [0, 1, 2]
        again = [v for v in seen if v == dead.value]
        assert again == [dead.value]


async def test_the_clients_member_dies_mid_run_and_nothing_is_lost_or_doubled() -> None:
    async with cluster_with_clients() as (c, addresses), client_of(addresses) as client:
        topic = client.topic("orders")
        group = topic.group("billing", visibility_timeout=20)
        await group.declare()
        for n in range(200):
            await topic.publish(n)
        lease = await group.claim("m1")
        assert lease is not None
        acked: list[int] = []

        async def consume(halfway: asyncio.Event, killed: asyncio.Event) -> None:
            while len(acked) < 199:
                if len(acked) == 100:  # half through the first member, half after it died
                    halfway.set()
                    await killed.wait()
                job = await group.claim("m2")
                receipt = await group.ack("m2", job.delivery_id)
                assert not receipt.duplicate
                acked.append(job.value)

        await kill_its_member_midway(c, client, consume)
        # the lease survived the switch: the ack through another member is accepted
        assert not (await group.ack("m1", lease.delivery_id)).duplicate
        assert sorted([*acked, lease.value]) == list(range(200))
        await client.barrier()
        assert group.lag() == 0


async def test_a_group_needs_the_consume_permission_on_its_topic() -> None:
    from lazily_queue import admin

    async with cluster_with_clients(produce=["orders"], consume=["orders"]) as (c, addresses):
        member = c.node(1)
        await member.topic("orders").group("billing").declare()
        await member.work_queue("orders:plain").push("private")
        async with client_of(addresses) as client:
            group = client.topic("orders").group("billing")
            await group.declare()
            await member.topic("orders").publish("x")
            await client.barrier()
            assert group.lag() == 1  # mirrored: reading it needs consume on the topic too
            job = await group.poll("m")
            assert job is not None and job.value == "x"
            await group.ack("m", job.delivery_id)
            await client.barrier()
            assert group.lag() == 0
            with pytest.raises(PermissionDenied,
                               match=r"may not consume from 'news' \(group_declare\)"):
                await client.topic("news").group("billing").declare()
            plain = client.work_queue("orders:plain")  # a work queue, not a group
            with pytest.raises(PermissionDenied, match="may not open 'orders:plain'"):
                await plain.poll("m")
            # Read before anything has the name, granted as a group of orders might be:
            # once it is a plain work queue the client is refused it, and sees nothing.
            assert client.view.work_queue("orders:later") is None  # starts mirroring it
            await client.barrier()
            await member.work_queue("orders:later").push("private")
            await client.barrier()
            assert client.view.work_queue("orders:later") is None
            assert "orders:later" in client._mirror.refused.get(("work_queue", "orders:later"),
                                                                "")
            # A group read as one, its topic deleted and its name taken by a plain work
            # queue: the client's mirror empties and sees none of the plain queue's.
            await admin.delete(member, "topic", "orders")
            await c.node(2).work_queue("orders:billing").push("private")
            await client.barrier()
            assert client.view.work_queue("orders:billing") is None
            assert ("work_queue", "orders:billing") in client._mirror.refused
    async with cluster_with_clients(produce=["orders"]) as (c, addresses), \
            client_of(addresses) as producer:
        with pytest.raises(PermissionDenied, match="lacks the consume"):
            await producer.topic("orders").group("billing").declare()



async def test_a_join_refused_for_want_of_consume_is_reported_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Joining starts mirroring the group: its refusal is the join's, not a warning."""
    async with cluster_with_clients(produce=["orders"]) as (c, addresses), \
            client_of(addresses) as producer:
        await c.node(1).topic("orders").group("billing").declare()
        group = producer.topic("orders").group("billing")
        with caplog.at_level("WARNING", logger="lazily_queue.client.mirror"):
            with pytest.raises(PermissionDenied, match="lacks the consume"):
                await group.declare()
            await producer.barrier()
            assert group.pending_len() == 0  # its readers stay empty, silently
        assert not [r for r in caplog.records if "cannot mirror" in r.getMessage()]
        assert ("work_queue", "orders:billing") in producer._mirror.refused


async def test_a_topic_deleted_on_a_member_takes_the_clients_group_and_it_comes_back() -> None:
    from lazily_queue import admin

    async with cluster_with_clients() as (c, addresses), client_of(addresses) as client:
        topic = client.topic("orders")
        group = topic.group("billing")
        await group.declare()
        group.lag()  # mirroring starts with this read
        await topic.publish("before")
        await client.barrier()
        assert group.lag() == 1
        await admin.delete(c.node(2), "topic", "orders")  # its groups go with it
        await client.barrier()
        assert group.lag() == 0 and client.view.work_queue("orders:billing") is None
        assert await group.poll("m") is None  # declared again by its next operation
        await topic.publish("after")
        job = await group.claim("m")
        assert job.value == "after"
        await group.ack("m", job.delivery_id)
        await client.barrier()
        assert group.lag() == 0


async def test_a_joined_groups_state_is_there_when_declare_returns() -> None:
    async with cluster_with_clients() as (c, addresses), client_of(addresses) as client:
        member_topic = c.node(1).topic("orders")
        await member_topic.publish("retained")
        group = client.topic("orders").group("billing", start="head")
        await group.declare()  # no read before: the declaration started the mirror
        assert group.lag() == 1 and [p.value for p in group.pending()] == ["retained"]


async def test_a_member_without_client_groups_refuses_joining_by_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from lazily_queue import UnsupportedOperation
    from lazily_queue.client import protocol as P

    monkeypatch.setattr(P, "FEATURES", ())  # the members announce what an older one does
    async with cluster_with_clients() as (c, addresses), client_of(addresses) as client:
        with pytest.raises(UnsupportedOperation, match="serves no consumer groups to clients"):
            await client.topic("orders").group("billing").declare()
        await client.topic("news").publish("plain topics still work")
        await client.barrier()
        for n in (1, 2, 3):  # refused before it was sent: no member made the group
            await c.node(n).barrier()
            assert c.node(n).view.work_queue("orders:billing") is None


async def test_a_group_declared_on_a_member_makes_its_new_topic_in_the_clients_mirror() -> None:
    async with cluster_with_clients() as (c, addresses), client_of(addresses) as client:
        assert client.view.topic("orders") is None  # both mirrored before they exist
        assert client.view.work_queue("orders:billing") is None
        await client.barrier()
        await c.node(2).topic("orders").group("billing").declare()  # makes the topic
        await client.barrier()
        assert client.view.topic("orders") is not None
        group = client.view.work_queue("orders:billing")
        assert group is not None and group.core.pending_len() == 0
        await c.node(2).topic("orders").publish("x")
        await client.barrier()
        assert client.view.topic("orders").end_offset() == 1
        assert group.core.pending_len() == 1  # fed once, as the member reported it


@pytest.mark.parametrize("version", [3, 4])
async def test_a_client_of_a_previous_protocol_mirrors_a_group_item_by_item(
    monkeypatch: pytest.MonkeyPatch, version: int,
) -> None:
    from lazily_queue.client import protocol as P

    async with cluster_with_clients() as (c, addresses):
        member_topic = c.node(1).topic("orders")
        await member_topic.subscribe("keeper")  # the topic retains
        for n in range(5):
            await member_topic.publish(n)
        await member_topic.group("audit", start="head").declare()
        from lazily_queue.client import cluster as cluster_module
        from lazily_queue.replicated import objects

        class Older:  # the client's protocol module, of an older version
            VERSION = version

            def __getattr__(self, name: str) -> Any:
                return getattr(P, name)

        monkeypatch.setattr(cluster_module, "P", Older())
        forms: list[bool] = []
        capture = objects.capture

        def noted(*args: Any, runs: bool = True) -> Any:
            forms.append(runs)
            return capture(*args, runs=runs)

        monkeypatch.setattr(objects, "capture", noted)
        older = client_of(addresses)
        older.session.id = new_session_id(older.credentials.name)  # it chooses its own
        async with older as client:
            group = client.topic("orders").group("audit")
            for _ in range(100):  # its mirror installs when its member answers the watch
                if group.lag():
                    break
                await asyncio.sleep(0.02)
            assert [p.value for p in group.pending()] == [0, 1, 2, 3, 4]
            served = [conn for n in (1, 2, 3) for conn in c.node(n).clients._conns]  # type: ignore[union-attr]
            assert [conn.protocol for conn in served] == [version] and forms and not any(forms)
