"""A client stops watching an object once it is deleted, so a long-lived client using
ever new names (a reply queue per request, deleted after) never runs into the objects a
link may watch; an object read again after its deletion is watched anew."""

from __future__ import annotations

import pytest

from lazily_queue import admin
from lazily_queue.client import watchers as watchers_module
from lazily_queue.client.mirror import Key, Mirror
from lazily_queue.reactive import Context, Effect
from lazily_queue.replicated import ops
from tests.client.test_client_cluster import client_of, cluster_with_clients
from tests.client.test_client_fairness import _until

pytestmark = pytest.mark.timeout(60)


async def test_a_client_using_ever_new_names_keeps_reading_new_objects(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(watchers_module, "MAX_WATCHES", 3)
    async with cluster_with_clients(1) as (c, addresses), client_of(addresses) as client:
        member = c.node(1)
        for k in range(8):  # more names than the link may watch at once
            replies = client.queue(f"reply-{k}")
            assert len(replies) == 0  # the first read starts mirroring it
            await member.queue(f"reply-{k}").push(k)
            await client.barrier()
            assert replies.len() == 1
            assert await replies.pop() == k
            await admin.delete(member, "queue", f"reply-{k}")
        clients = member.clients
        assert clients is not None
        await _until(lambda: clients.stats()["watched"] == 0, "the member's watches freed")


async def test_a_deleted_object_read_again_is_watched_anew() -> None:
    async with cluster_with_clients(1) as (c, addresses), client_of(addresses) as client:
        member = c.node(1)
        jobs = client.queue("jobs")
        assert len(jobs) == 0
        await client.barrier()
        seen: list[int] = []
        effect = Effect(lambda: seen.append(jobs.len()), context=jobs.ctx)
        await member.queue("jobs").push("a")
        await client.barrier()
        assert seen[-1] == 1
        await admin.delete(member, "queue", "jobs")
        await client.barrier()
        assert seen[-1] == 0
        await member.queue("jobs").push("b")  # declared again, by another
        await member.queue("jobs").push("c")
        await client.barrier()
        assert seen[-1] == 2 and jobs.peek() == "b"
        effect.dispose()


def test_a_state_arriving_after_the_deletion_unwatched_it_is_ignored() -> None:
    """The member may send an object's state (a snapshot installed there) before it
    reads the client's unwatch: installing it would leave the object looking watched
    while the member sends nothing more for it, so the next read would not watch it."""
    asked: list[Key] = []
    released: list[Key] = []
    mirror = Mirror(Context(name="mirror"), asked.append, released.append)
    assert mirror.view.queue("jobs") is None  # a read asks for it
    assert asked == [("queue", "jobs")]
    mirror.install(("queue", "jobs"), 3, [None, False, ["a"]])
    mirror.replay([["queue", "jobs", 4, 0, [ops.QUEUE_DELETE, "jobs"]]])
    assert released == [("queue", "jobs")]
    mirror.install(("queue", "jobs"), 4, [None, False, ["late"]])  # sent before the unwatch
    assert mirror.view.queue("jobs") is None  # read again: watched anew
    assert asked == [("queue", "jobs")] * 2
