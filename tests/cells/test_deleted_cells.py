"""A node (or client) lets the cells of deleted objects go: a cell nobody holds is
freed, so ever new names used and deleted take no memory for good; one still held
keeps working, and opening its name again returns it."""

from __future__ import annotations

import gc
import weakref

import pytest

from lazily_queue import admin, testing
from lazily_queue.reactive import Effect
from tests.client.test_client_cluster import client_of, cluster_with_clients

pytestmark = pytest.mark.timeout(60)


async def test_the_cells_of_deleted_objects_nobody_holds_are_freed() -> None:
    async with testing.cluster(1) as c:
        node = c.node(1)
        for k in range(5):
            q, t, w = node.queue(f"q{k}"), node.topic(f"t{k}"), node.work_queue(f"w{k}")
            await q.push(k)
            await t.publish(k)
            await w.push(k)
            assert len(q) == 1
            freed = [weakref.ref(cell) for cell in (q, t, w)]
            del q, t, w
            for kind, name in (("queue", f"q{k}"), ("topic", f"t{k}"),
                               ("work_queue", f"w{k}")):
                await admin.delete(node, kind, name)
            gc.collect()
            assert [ref() for ref in freed] == [None, None, None]
        assert node._queue_cells == node._topic_cells == node._work_cells == {}
        assert len(node._router.released) == 0
        assert len(node.queue("q0")) == 0  # a name used again starts anew


async def test_a_held_cell_of_a_deleted_object_keeps_working() -> None:
    async with testing.cluster(1) as c:
        node = c.node(1)
        q = node.queue("jobs")
        await q.push("a")
        seen: list[int] = []
        effect = Effect(lambda: seen.append(q.len()), context=q.ctx)
        await admin.delete(node, "queue", "jobs")
        gc.collect()
        assert seen[-1] == 0
        await q.push("b")  # declares it again
        assert seen[-1] == 1
        assert node.queue("jobs") is q  # opening the name again returns the held cell
        async with node.transaction() as tx:
            tx.push(q, "c")
        assert await q.pop_many(5) == ["b", "c"]
        effect.dispose()


async def test_a_client_lets_the_cells_of_deleted_objects_go() -> None:
    async with cluster_with_clients(1) as (c, addresses), client_of(addresses) as client:
        for k in range(5):
            q = client.queue(f"reply-{k}")
            assert len(q) == 0  # read: mirrored, so the client hears of its deletion
            await q.push(k)
            assert await q.pop() == k
            ref = weakref.ref(q)
            del q
            await admin.delete(c.node(1), "queue", f"reply-{k}")
            await client.barrier()
            gc.collect()
            assert ref() is None
        assert client._queue_cells == {}


async def test_a_deleted_topics_groups_go_with_its_cell() -> None:
    async with testing.cluster(1) as c:
        node = c.node(1)
        for k in range(3):
            topic = node.topic(f"t{k}")
            group = topic.group("billing", visibility_timeout=30)
            await topic.publish(k)
            job = await group.claim("w")
            await group.ack("w", job.delivery_id)
            freed = [weakref.ref(topic), weakref.ref(group)]
            del topic, group, job
            await admin.delete(node, "topic", f"t{k}")
            gc.collect()
            assert [ref() for ref in freed] == [None, None]
        assert node._router.work_queues == {} and len(node._router.released) == 0


async def test_a_snapshot_installed_lets_the_cells_of_objects_it_lacks_go() -> None:
    """A member that fell behind installs a snapshot instead of applying the deletions:
    the cells of the objects the snapshot does not hold go as a deletion's would."""
    async with testing.cluster(1) as c:
        node = c.node(1)
        gone, kept = node.queue("gone"), node.queue("kept")
        await gone.push(1)
        await kept.push(1)
        state = node.driver.replica.fsm
        doc = state.capture()
        del doc["queues"]["gone"]
        state.restore(doc)  # as an installed snapshot restores it
        node._router.route(state.drain_events())
        freed = weakref.ref(gone)
        del gone
        gc.collect()
        assert freed() is None
        assert node.queue("kept") is kept and len(kept) == 1
