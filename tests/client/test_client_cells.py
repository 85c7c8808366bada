"""A client holds the cells of the names it opened last and lets the others go unless
the application holds them: a client pushing to ever new names (which it never reads,
so it never hears them deleted) takes bounded memory, and a cell the application holds
is the one its name opens."""

from __future__ import annotations

import asyncio
import gc
import threading
import time
import weakref
from collections.abc import Callable

import pytest

from lazily_queue import admin
from lazily_queue.cells.queue import QueueCell
from lazily_queue.client import watchers
from lazily_queue.storage.remote import RemoteQueueStorage
from tests.client.limits_cluster import limited_cluster
from tests.client.test_client_cluster import client_of, cluster_with_clients

pytestmark = pytest.mark.timeout(60)


def _full_collection() -> None:
    """Collect every generation on this thread. ``gc.collect()`` does nothing while
    another thread is collecting (a member's snapshot or fsync thread here), leaving the
    garbage of the older generations counted: it is called again until one ran here."""
    me, ran = threading.get_ident(), []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "stop" and info["generation"] == 2 and threading.get_ident() == me:
            ran.append(True)

    gc.callbacks.append(seen)
    try:
        gc.collect()
        while not ran:
            time.sleep(0.01)  # the other thread's collection goes on meanwhile
            gc.collect()
    finally:
        gc.callbacks.remove(seen)


def _client_queues() -> int:
    """The client queue cells and storages alive in this process."""
    _full_collection()
    return sum(type(o) in (QueueCell, RemoteQueueStorage) for o in gc.get_objects())


def test_a_count_is_of_the_living_while_another_thread_collects() -> None:
    before = _client_queues()
    collecting, finish = threading.Event(), threading.Event()

    class Slow:
        def __init__(self) -> None:
            self.me = self

        def __del__(self) -> None:  # runs inside the other thread's collection
            collecting.set()
            finish.wait(5)

    def collect() -> None:
        Slow()
        gc.collect()

    other = threading.Thread(target=collect)
    other.start()
    try:
        assert collecting.wait(5)
        garbage: list[object] = [RemoteQueueStorage.__new__(RemoteQueueStorage)]
        garbage.append(garbage)  # freed by a collection only
        del garbage
        threading.Timer(0.2, finish.set).start()
        assert _client_queues() == before
    finally:
        finish.set()
        other.join()


@pytest.mark.slow
@pytest.mark.timeout(300)
async def test_pushing_to_30_000_new_names_leaves_the_client_bounded() -> None:
    names, batch = 30_000, 500
    async with cluster_with_clients(1) as (c, addresses), client_of(addresses) as client:
        client.recent_cells = 256  # the bound, reached 100 times over
        member = c.node(1)
        counts: list[tuple[int, int]] = []
        for start in range(0, names, batch):
            await asyncio.gather(*(client.queue(f"job-{i}").push(i)
                                   for i in range(start, start + batch)))
            for i in range(start, start + batch):  # consumed and deleted elsewhere
                await admin.delete(member, "queue", f"job-{i}")
            if (start + batch) % 5_000 == 0:
                counts.append((_client_queues(), len(gc.get_objects())))
        assert client._mirror.positions == {}  # never read: never heard deleted
        first, last = counts[0], counts[-1]
        assert last[0] == first[0] and last[1] - first[1] < 5_000, counts  # 25,000 more names
        assert first[0] == 2 * client.recent_cells  # a cell and its storage per name held
        assert len(client._queue_cells) == len(client._router.queues) == client.recent_cells


async def test_a_held_cell_is_the_one_its_name_opens_and_an_unheld_one_goes() -> None:
    async with cluster_with_clients(1) as (_, addresses), client_of(addresses) as client:
        client.recent_cells = 4
        held = client.queue("held")
        await held.push("a")
        gone = weakref.ref(client.queue("gone"))
        for k in range(10):  # more names than it holds
            await client.queue(f"other-{k}").push(k)
        gc.collect()
        assert gone() is None
        assert "held" not in client._queue_cells  # let go, but held by the application
        assert client.queue("held") is held
        assert client.queue("held", capacity=None) is held
        assert await held.pop() == "a"
        async with client.transaction() as tx:  # a transaction takes a cell let go too
            for k in range(10):
                client.queue(f"more-{k}")
            tx.push(held, "b")
        assert await held.pop() == "b"
        assert len(client._queue_cells) <= 4


async def test_a_cell_let_go_reads_and_updates_as_before() -> None:
    async with cluster_with_clients(1) as (c, addresses), client_of(addresses) as client:
        client.recent_cells = 1
        replies = client.queue("replies")
        assert len(replies) == 0  # mirrored
        client.queue("other")  # "replies" is let go, held by the test
        await c.node(1).queue("replies").push("x")
        await client.barrier()
        assert replies.len() == 1
        del replies
        gc.collect()
        again = client.queue("replies")  # a new cell over the same mirror
        assert again.len() == 1 and await again.pop() == "x"


async def test_a_topic_let_go_still_ends_its_ephemeral_subscriptions_at_close() -> None:
    async with limited_cluster(1, produce=True) as (c, addresses):
        async with client_of(addresses) as client:
            client.recent_cells = 1
            await client.topic("news").subscribe("mine", "ephemeral")
            await client.topic("sports").subscribe("kept", "ephemeral")
            await client.topic("sports").disconnect("kept")
            for k in range(3):
                client.queue(f"other-{k}")
            gc.collect()
            assert "news" not in client._topic_cells
            assert [t.name for t in client._ephemeral] == ["news"]
        await c.settle()
        core = c.node(1).view.topic("news")
        assert core is not None and core.subscriptions() == {}



async def _settled(condition: Callable[[], bool]) -> None:
    for _ in range(200):
        if condition():
            return
        await asyncio.sleep(0.02)


async def test_a_client_reading_ever_new_names_keeps_the_watches_of_those_it_holds(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(watchers, "MAX_WATCHES", 8)  # what a link may read at once
    async with cluster_with_clients(1) as (c, addresses), client_of(addresses) as client:
        client.recent_cells = 2
        held = client.topic("held")
        await held.subscribe("me")
        for k in range(40):  # a long-lived client reading per-user objects, one by one
            q = client.queue(f"user-{k}", ttl=600)
            q.len()  # read: mirrored from now on
            await q.push(k)
            await client.barrier()
            assert q.len() == 1, k  # mirrored, never refused for the names read before
            await c.node(1).queue(f"user-{k}").pop()
            del q
            gc.collect()
        mirror, by_key = client._mirror, c.node(1).clients._watchers.by_key
        await _settled(lambda: len(by_key) <= 4)
        assert len(mirror.positions) <= 4 and len(by_key) <= 4  # the recent cells and "held"
        assert len(mirror.sm.queues) <= 3 and mirror.refused == {}
        assert len(mirror.sm.expiry) <= 3  # the copies go with their expiry rules
        await c.node(1).topic("held").publish("x")
        await client.barrier()
        assert held.reader("me")() == ["x"]  # what the application holds stays mirrored


async def test_a_held_cell_let_go_again_and_again_is_watched_for_once() -> None:
    async with cluster_with_clients(1) as (_, addresses), client_of(addresses) as client:
        client.recent_cells = 1
        held = client.queue("held")
        storage = client._router.storage("queue", "held")
        for k in range(50):  # opened again, then let go by the next name
            assert client.queue("held") is held
            client.queue(f"other-{k}")
        registry = weakref.finalize._registry  # type: ignore[attr-defined]
        assert sum(1 for info in registry.values() if info.weakref() is storage) == 1
