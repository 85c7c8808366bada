"""Message ids and enqueue times on TopicCell (offset) and WorkQueueCell (item id)."""

from __future__ import annotations

import contextlib
from typing import Any

from lazily_queue import Message, TopicCell, WorkQueueCell, testing
from lazily_queue.core.stamps import StampIndex
from lazily_queue.core.topic import TopicCore
from lazily_queue.core.work import WorkQueueCore
from lazily_queue.replicated import objects
from lazily_queue.replicated.state_machine import StateMachine
from lazily_queue.replicated.work_queues import WorkState


async def _first(stream: Any, n: int) -> list[Any]:
    got: list[Any] = []
    async with contextlib.aclosing(stream) as items:
        async for item in items:
            got.append(item)
            if len(got) == n:
                break
    return got


async def test_local_topic_messages_are_offsets_with_the_clock_s_time() -> None:
    now = [10.0]
    t: TopicCell[str] = TopicCell(clock=lambda: now[0])
    await t.subscribe("s")
    await t.publish("a")
    now[0] = 12.0
    await t.publish("b")
    assert await _first(t.stream_messages("s"), 2) == [
        Message(0, "a", 10.0), Message(1, "b", 12.0)]
    plain: TopicCell[str] = TopicCell()
    await plain.subscribe("s")
    await plain.publish("x")
    assert await _first(plain.stream_messages("s"), 1) == [Message(0, "x", None)]


async def test_local_jobs_carry_item_id_enqueue_time_and_delivery_count() -> None:
    w = WorkQueueCell(visibility_timeout=5.0, clock=lambda: 100.0)
    await w.push("a")
    async with contextlib.aclosing(w.deliveries("w")) as jobs:
        async for job in jobs:
            assert (job.message_id, job.enqueued_at, job.delivery_count) == (0, 100.0, 1)
            await job.nack()
            break
    async with contextlib.aclosing(w.deliveries("w")) as jobs:
        async for job in jobs:
            assert (job.message_id, job.enqueued_at, job.delivery_count) == (0, 100.0, 2)
            break


async def test_replicated_topic_and_work_messages_on_every_member() -> None:
    async with testing.cluster(3) as c:
        leader = await c.leader()
        follower = (await c.followers())[0]
        await leader.topic("t").subscribe("s")
        await follower.topic("t").publish("a")
        [m] = await _first(follower.topic("t").stream_messages("s"), 1)
        assert (m.id, m.value, m.delivery_count) == (0, "a", 1)
        assert m.enqueued_at is not None and m.enqueued_at > 1e9
        await follower.work_queue("w").push("job")
        async with contextlib.aclosing(leader.work_queue("w").deliveries("x")) as jobs:
            async for job in jobs:
                assert job.message_id == 0 and job.delivery_count == 1
                assert job.enqueued_at is not None and job.enqueued_at > 1e9
                break
        await c.settle()
        stamps = {node.node_id: (node.view.topic("t").stamps(),  # type: ignore[union-attr]
                                 node.view.work_queue("w").core.stamps())  # type: ignore
                  for node in c.running}
        assert len(set(map(str, stamps.values()))) == 1


def test_stamps_survive_snapshots_and_mirrors_and_gc_trims_them() -> None:
    sm = StateMachine()
    topic: TopicCore[str] = TopicCore()
    topic.subscribe("s")
    topic.publish("a", 1_000)
    topic.publish("b", 2_000)
    sm.topics["t"] = topic
    work = WorkQueueCore(30_000)
    work.push("j", 5_000)

    sm.work_queues["w"] = WorkState(work)
    doc = sm.capture()
    again = StateMachine()
    again.restore(doc)
    assert again.topics["t"].stamp_of(1) == 2_000
    assert again.work_queues["w"].core.stamp_of(0) == 5_000
    mirror = StateMachine()
    objects.install(mirror, "topic", "t", objects.capture(sm, "topic", "t"))
    objects.install(mirror, "work_queue", "w", objects.capture(sm, "work_queue", "w"))
    assert mirror.topics["t"].stamps() == [[0, 1_000], [1, 2_000]]
    assert mirror.work_queues["w"].core.stamp_of(0) == 5_000
    topic.advance("s")
    topic.advance("s")
    topic.gc()
    assert topic.stamps() == [[1, 2_000]]


def test_stamp_index_keeps_change_points_only() -> None:
    index = StampIndex()
    for i in range(100):
        index.note(i, 7)
    index.note(100, 8)
    assert index.points() == [[0, 7], [100, 8]]
    assert index.stamp_of(50) == 7 and index.stamp_of(100) == 8 and index.stamp_of(500) == 8
    index.forget_below(100)
    assert index.points() == [[100, 8]] and index.stamp_of(3) == 0
    assert StampIndex.from_points(index.points()).points() == [[100, 8]]


def test_a_long_lived_work_queue_forgets_stamps_of_items_it_no_longer_holds() -> None:
    core = WorkQueueCore(30.0)
    for i in range(1000):
        core.push(i, i)  # a new stamp each push
        delivery = core.claim("w", 0.0).result
        assert delivery is not None and delivery.enqueued == i
        core.ack("w", delivery.delivery_id)
    assert len(core.stamps()["points"]) <= 130
    again = WorkQueueCore.from_snapshot(core.snapshot())
    again.load_stamps(core.stamps())
    for i in range(1000, 1100):  # a restored replica trims at the same pushes
        core.push(i, i)
        again.push(i, i)
        assert again.stamps() == core.stamps()


async def test_a_client_sees_the_same_ids_and_enqueue_times_as_the_members() -> None:
    from lazily_queue import ClientAccess, ClientGrant, Credentials, connect

    def options(node_id: str) -> testing.NodeOptions:
        grant = ClientGrant("web", b"token-of-the-web-tier", produce=["*"], consume=["*"])
        return {"clients": ClientAccess([grant], listen=f"memory://ids-{node_id}")}

    async with testing.cluster(3, node_options=options) as c:
        addresses = [f"memory://ids-{i}" for i in range(1, 4)]
        async with connect(addresses, Credentials("web", b"token-of-the-web-tier"),
                           ping_interval=0.2, ping_timeout=1.0) as client:
            q = client.queue("q")
            await c.node(2).queue("q").push("a")
            await q.push("b")
            taken = await q.pop_messages(2)
            assert [(m.id, m.value) for m in taken] == [(0, "a"), (1, "b")]
            assert all(m.enqueued_at is not None for m in taken)
            await q.give_back(taken[1:])
            again = await c.node(3).queue("q").pop_message()
            assert again == taken[1]  # same id, same enqueue time
            t = client.topic("t")
            await t.subscribe("s")
            await c.node(1).topic("t").publish("x")
            [m] = await _first(t.stream_messages("s"), 1)
            assert m.id == 0 and m.enqueued_at is not None
            w = client.work_queue("w")
            await w.push("job")
            async with contextlib.aclosing(w.deliveries("x")) as jobs:
                async for job in jobs:
                    assert job.message_id == 0 and job.enqueued_at is not None
                    break
