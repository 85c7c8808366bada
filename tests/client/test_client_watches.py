"""A client stops watching an object once it is deleted, so a long-lived client using
ever new names (a reply queue per request, deleted after) never runs into the objects a
link may watch; an object read again after its deletion is watched anew. What a client
watches through all its links together is bounded too."""

from __future__ import annotations

from typing import Any

import cbor2
import pytest
from lazily_transports import LinkStream

from lazily_queue import admin
from lazily_queue.client import protocol as P
from lazily_queue.client import watchers as watchers_module
from lazily_queue.client.mirror import Key, Mirror
from lazily_queue.reactive import Context, Effect
from lazily_queue.replicated import ops
from tests.client.one_member import linked, one_member
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


async def _ask(stream: LinkStream, request: list[Any]) -> list[Any]:
    await stream.send(cbor2.dumps(request))
    return cbor2.loads(await stream.receive())  # type: ignore[no-any-return]


async def test_a_client_watches_names_of_bounded_length_through_all_its_links(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each link within its own bound, a client's links together may not hold more: a
    client opening link after link cannot make the member keep ever more names."""
    monkeypatch.setattr(watchers_module, "MAX_WATCHED_NAME_BYTES", 2_000)
    monkeypatch.setattr(watchers_module, "MAX_CLIENT_WATCHED_CHARS", 3_000)
    async with one_member() as member:
        first, second = await linked(member), await linked(member)
        try:
            assert (await _ask(first, [2, P.WATCH, "queue", "a" * 1_500]))[1] == P.OK
            assert (await _ask(second, [2, P.WATCH, "queue", "b" * 1_500]))[1] == P.OK
            answer = await _ask(second, [3, P.WATCH, "queue", "c"])  # its link has room
            assert answer[:2] == [3, P.ERROR] and answer[2][0] == "refused"
            assert "through all its links" in answer[2][1]
            assert "reads 3,000 already" in answer[2][1]
            assert (await _ask(second, [4, P.WATCH, "queue", "b" * 1_500]))[1] == P.OK  # held
            assert (await _ask(first, [3, P.UNWATCH, "queue", "a" * 1_500]))[1] == P.OK
            assert (await _ask(second, [5, P.WATCH, "queue", "c"]))[1] == P.OK
        finally:
            await first.aclose()
        await second.aclose()
        assert member.clients is not None
        await _until(lambda: not member.clients._watchers.by_client, "the names freed")
