"""Clients of an in-process cluster: the same cells over a link to one member, mirrors
updated as the member applies, failover without duplicates, leases across a switch."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from lazily_queue import (
    ClientAccess,
    ClientGrant,
    ClusterClient,
    Credentials,
    QueueCell,
    ResultNotKept,
    WorkQueueCell,
    connect,
    testing,
)
from lazily_queue.client import leader_seeking
from lazily_queue.client import protocol as P
from lazily_queue.client import server as server_module
from lazily_queue.errors import InvalidConfiguration
from lazily_queue.reactive import Context, Effect

pytestmark = pytest.mark.timeout(60)

TOKEN = b"token-of-the-web-tier"
_clusters = itertools.count()


@asynccontextmanager
async def cluster_with_clients(size: int = 3, **grant: Any) -> AsyncIterator[
        tuple[testing.Cluster, list[str]]]:
    prefix = f"memory://clients-{next(_clusters)}"
    permissions = grant or {"produce": ["*"], "consume": ["*"]}

    def options(node_id: str) -> testing.NodeOptions:
        access = ClientAccess([ClientGrant("web", TOKEN, **permissions)],
                              listen=f"{prefix}-{node_id}")
        return {"clients": access}

    async with testing.cluster(size, node_options=options) as c:
        yield c, [f"{prefix}-{i}" for i in range(1, size + 1)]


def client_of(addresses: list[str], **options: Any) -> ClusterClient:
    options.setdefault("ping_interval", 0.2)
    options.setdefault("ping_timeout", 1.0)
    return connect(addresses, Credentials("web", TOKEN), **options)


async def test_a_client_has_the_cells_of_a_member_with_reactive_readers() -> None:
    async with cluster_with_clients() as (c, addresses), client_of(addresses) as client:
        q: QueueCell[Any] = client.queue("orders")
        assert len(q) == 0  # the first read starts mirroring the queue
        await client.barrier()
        seen: list[int] = []
        effect = Effect(lambda: seen.append(q.len()), context=q.ctx)
        member_q = c.node(2).queue("orders")  # another member pushes
        await member_q.push("a")
        await member_q.push("b")
        await client.barrier()
        assert seen[-1] == 2 and q.peek() == "a"
        assert await q.pop() == "a"  # read-your-writes: the mirror has the pop already
        assert q.len() == 1 and seen[-1] == 1
        effect.dispose()
        assert [await q.pop_many(5)] == [["b"]]


async def test_work_queue_and_topic_consumers_batch_through_a_client() -> None:
    async with cluster_with_clients() as (c, addresses), client_of(addresses) as client:
        jobs: WorkQueueCell = client.work_queue("jobs", visibility_timeout=5)
        await c.node(1).work_queue("jobs", visibility_timeout=5).push("first")
        for i in range(9):
            await jobs.push(i)
        done: list[Any] = []
        deliveries = jobs.deliveries("w1", prefetch=4)
        async for job in deliveries:
            async with job:
                done.append(job.value)
            if len(done) == 10:
                break
        await deliveries.aclose()  # settles the background acks
        await client.barrier()
        assert done == ["first", *range(9)]
        assert (jobs.pending_len(), jobs.in_flight_len()) == (0, 0)
        topic = client.topic("news")
        await topic.subscribe("reader")
        for i in range(5):
            await c.node(3).topic("news").publish(i)
        read: list[int] = []
        async for value in topic.stream("reader", batch=2):
            read.append(value)
            if len(read) == 5:
                break
        assert read == list(range(5))


async def kill_its_member_midway(
    c: testing.Cluster, client: ClusterClient,
    run: Callable[[asyncio.Event, asyncio.Event], Awaitable[None]],
) -> None:
    """Run ``run(halfway, killed)``: once it sets ``halfway``, kill the member ``client``
    is linked to and set ``killed``; returns when it ends, the client linked elsewhere."""
    halfway, killed = asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(run(halfway, killed))
    await halfway.wait()
    first = client.member
    assert first is not None
    await c.kill(first)
    killed.set()
    await task
    assert client.member not in (None, first)


async def test_the_member_it_is_linked_to_dies_and_nothing_is_lost_or_doubled() -> None:
    async with cluster_with_clients() as (c, addresses), client_of(addresses) as client:
        q = client.queue("q")
        jobs = client.work_queue("jobs", visibility_timeout=20)
        await jobs.push("leased")
        lease = await jobs.claim("w1")

        async def produce(halfway: asyncio.Event, killed: asyncio.Event) -> None:
            for i in range(200):
                if i == 100:  # half through the first member, half after it died
                    halfway.set()
                    await killed.wait()
                await q.push(i)

        await kill_its_member_midway(c, client, produce)
        # the lease survived the switch: the ack through another member is accepted
        receipt = await jobs.ack("w1", lease.delivery_id)
        assert not receipt.duplicate
        assert await q.pop_many(1000) == list(range(200))


def lose_first_answer(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The first op a member answers applies, but its link dies before the answer: the
    request ids of the lost answers are listed in what it returns."""
    original = server_module.ClientServer._answer
    dropped: list[int] = []

    def lose_first_answer(self: Any, conn: Any, rid: int, result: Any, error: Any) -> None:
        if not dropped:
            dropped.append(rid)
            self._release(conn)
            conn.close()
            return
        original(self, conn, rid, result, error)

    monkeypatch.setattr(server_module.ClientServer, "_answer", lose_first_answer)
    return dropped


async def test_an_answer_lost_with_its_member_is_retried_and_applied_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with cluster_with_clients() as (c, addresses), client_of(addresses) as client:
        q = client.queue("q")
        await q.push("declared")
        dropped = lose_first_answer(monkeypatch)
        await q.push("once")
        assert dropped
        assert await q.pop_many(10) == ["declared", "once"]
        view = c.node(1).view
        assert view.duplicate_ops >= 1


async def test_a_retried_take_of_large_values_is_answered_with_the_same_elements(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with cluster_with_clients() as (_c, addresses), client_of(addresses) as client:
        q = client.queue("q")
        big = [bytes([i]) * 1_000_000 for i in range(9)]
        for value in big:  # 9 MB in all: more than a session keeps
            await q.push(value)
        dropped = lose_first_answer(monkeypatch)
        assert await q.pop_many(9) == big[:4]  # a take stops at 4 MiB: its result is kept
        assert dropped
        assert await q.pop_many(9) == big[4:8]


async def test_a_retry_whose_result_was_too_large_to_keep_says_so_and_applies_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with cluster_with_clients() as (_c, addresses), client_of(addresses) as client:
        jobs = client.work_queue("w")
        wide = [i % 128 for i in range(250_000)]  # 250 kB sent, 11 MB held: never kept
        await jobs.push(wide)
        dropped = lose_first_answer(monkeypatch)
        with pytest.raises(ResultNotKept, match="already applied; its result is no longer kept"):
            await jobs.claim_many("a", 9)
        assert dropped
        await jobs.push("after")
        [after] = await jobs.claim_many("a", 10)  # the retry leased nothing again
        assert after.value == "after"


async def test_a_cancelled_pop_puts_its_element_back() -> None:
    async with cluster_with_clients() as (_c, addresses), client_of(addresses) as client:
        q = client.queue("q")
        await q.push("kept")
        popping = asyncio.create_task(q.pop())
        await asyncio.sleep(0)  # sent, not answered yet
        popping.cancel()
        with pytest.raises(asyncio.CancelledError):
            await popping
        for _ in range(50):
            await client.barrier()
            if len(q) == 1:
                break
        assert await q.pop() == "kept"


async def test_more_operations_than_the_window_all_complete() -> None:
    async with cluster_with_clients() as (_c, addresses), \
            client_of(addresses, max_in_flight=4) as client:
        q = client.queue("q")
        await asyncio.gather(*(q.push(i) for i in range(100)))
        assert sorted(await q.pop_many(200)) == list(range(100))


async def test_clients_of_two_contexts_and_the_context_given() -> None:
    ctx = Context()
    async with cluster_with_clients() as (_c, addresses), \
            client_of(addresses, context=ctx) as client:
        assert client.queue("q").ctx is ctx


async def test_a_member_without_quorum_sends_its_client_to_the_majority() -> None:
    async with cluster_with_clients() as (c, addresses), \
            client_of(addresses, op_timeout=10) as client:
        q = client.queue("q")
        await q.push("before")
        lonely = client.member
        assert lonely is not None
        c.isolate(lonely)
        await q.push("during")  # refused with NoQuorum there, committed through another
        assert client.member != lonely
        c.heal()
        await c.settle()
        assert await q.pop_many(10) == ["before", "during"]


async def test_a_large_mirror_arrives_in_parts() -> None:
    async with cluster_with_clients() as (c, addresses), client_of(addresses) as client:
        member_jobs = c.node(1).work_queue("big")
        await asyncio.gather(*(member_jobs.push("x" * 2000) for _ in range(400)))
        jobs = client.work_queue("big")
        assert jobs.pending_len() == 0  # mirroring starts with this read
        await client.barrier()
        assert jobs.pending_len() == 400  # about 800 KB: more than one frame
        assert jobs.pending()[0].value == "x" * 2000


async def test_a_client_moves_to_the_leader_unless_told_not_to() -> None:
    async with cluster_with_clients() as (c, addresses):
        leader = (await c.leader()).node_id
        follower_first = sorted(addresses, key=lambda a: a.endswith(f"-{leader}"))
        async with client_of(follower_first) as client:
            await client.queue("q").push(1)
            await client.barrier()
            assert client.member == leader
            assert client.members[addresses[int(leader) - 1]] == leader
        async with client_of(follower_first, prefer_leader=False) as client:
            await client.queue("q").push(2)
            assert client.member != leader


async def test_a_client_seeking_the_leader_past_a_dead_address_tries_the_next_one() -> None:
    """Addresses: one nothing answers at, a follower's, the leader's. From the follower
    the client tries the address after it, not the dead one before it again (it would
    go back and forth between those two for good)."""
    async with cluster_with_clients() as (c, addresses):
        leader = (await c.leader()).node_id
        follower = next(a for a in addresses if not a.endswith(f"-{leader}"))
        dead = addresses[0].rsplit("-", 1)[0] + "-nobody"
        order = [dead, follower, addresses[int(leader) - 1]]
        async with client_of(order, op_timeout=5.0) as client:
            await client.queue("q").push(1)
            assert client.member == leader


def first_hello_knows_no_leader(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each link's first hello is answered as by a member that knows no leader yet (an
    election under way); later hellos as usual."""
    answered: set[int] = set()
    real_hello = server_module.ClientServer._hello

    def hello(self: Any, conn: Any, rid: int, frame: list[Any]) -> None:
        if id(conn) in answered:
            real_hello(self, conn, rid, frame)
            return
        answered.add(id(conn))
        conn.session = frame[3] or None  # 0: it registers one
        conn.protocol, conn.greeted = frame[2], True
        conn.send([rid, P.OK, {"node": self.node.node_id, "cluster": self.node.cluster,
                               "leader": None}])

    monkeypatch.setattr(server_module.ClientServer, "_hello", hello)


async def push_across_the_move(client: ClusterClient, leader: str) -> None:
    """Push 1 from a follower, wait until the client moved to ``leader``, push 2 there;
    both committed when it returns."""
    await client.queue("q").push(1)
    for _ in range(200):
        if client.member == leader:
            break
        await asyncio.sleep(0.05)
    assert client.member == leader
    await client.queue("q").push(2)
    await client.barrier()


async def test_a_client_linked_before_a_leader_is_known_moves_to_it_later(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A member that knew no leader when the client said hello (an election under way)
    names it in a later hello; the client then moves to the leader."""
    first_hello_knows_no_leader(monkeypatch)
    monkeypatch.setattr(leader_seeking, "LEADER_RETRY", 0.05)
    async with cluster_with_clients() as (c, addresses):
        leader = (await c.leader()).node_id
        follower_first = sorted(addresses, key=lambda a: a.endswith(f"-{leader}"))
        async with client_of(follower_first) as client:
            await push_across_the_move(client, leader)
            assert await client.queue("q").pop_many(5) == [1, 2]


async def test_more_outstanding_than_the_session_window_waits_for_the_floor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from lazily_queue.client import session as session_module
    from lazily_queue.replicated import state_machine

    monkeypatch.setattr(session_module, "CLIENT_WINDOW", 8)  # the members' window, known
    monkeypatch.setattr(state_machine, "CLIENT_WINDOW", 8)  # to the client
    async with cluster_with_clients() as (_c, addresses), \
            client_of(addresses, max_in_flight=100) as client:
        q = client.queue("q")
        await asyncio.gather(*(q.push(i) for i in range(100)))  # none refused
        assert sorted(await q.pop_many(200)) == list(range(100))


async def test_a_restarted_member_serves_its_clients_again() -> None:
    async with cluster_with_clients() as (c, addresses):
        node = c.node(1)
        assert node.clients is not None
        before = list(node.clients.addresses)
        await c.kill(1)
        await c.restart(1)
        assert node.clients.addresses == before
        async with client_of([addresses[0]], prefer_leader=False) as client:
            await client.queue("q").push("after the restart")
            assert client.member == "1"


async def test_a_members_status_counts_its_clients() -> None:
    from rich.console import Console

    from lazily_queue.cli.status_view import render
    from lazily_queue.status import node_status

    async with cluster_with_clients() as (c, addresses), \
            client_of([addresses[0]], prefer_leader=False) as client:
        await client.queue("q").push(1)
        doc = node_status(c.node(1))
        assert doc["clients"]["connections"] == 1 and doc["clients"]["requests"] >= 2
        assert doc["clients"]["addresses"] == [addresses[0]] and doc["clients"]["refused"] == 0
        console = Console(record=True, width=140)
        console.print(*render(doc))
        assert addresses[0] in console.export_text()


async def test_closing_the_client_fails_its_waiters_and_tuples_stay_tuples() -> None:
    from lazily_queue import ClientClosed

    async with cluster_with_clients() as (_c, addresses):
        client = client_of(addresses)
        async with client:
            q = client.queue("q")
            await q.push(("a", (1, 2), [3]))
            assert await q.pop() == ("a", (1, 2), [3])  # the value model's tuples
            waiting = asyncio.create_task(q.pop())
            await client.barrier()
            assert not waiting.done()
        with pytest.raises(ClientClosed):
            await waiting
        with pytest.raises(ClientClosed, match="client is closed"):
            await q.push(1)


async def test_a_client_opens_cells_with_a_serializer_as_a_member_does() -> None:
    from lazily_queue import serializer

    class Point:
        def __init__(self, x: int, y: int) -> None:
            self.x, self.y = x, y

    points = serializer(lambda p: [p.x, p.y], lambda v: Point(*v))
    async with cluster_with_clients() as (c, addresses), client_of(addresses) as client:
        q = client.queue("points", serializer=points)
        assert client.queue("points", serializer=points) is q
        await q.push(Point(1, 2))
        got = await q.pop()
        assert isinstance(got, Point) and (got.x, got.y) == (1, 2)
        await q.push(Point(3, 4))
        await client.barrier()
        assert await c.node(1).queue("points").pop() == [3, 4]  # stored plain


async def test_connect_is_awaitable_and_refuses_other_schemes() -> None:
    from lazily_transports import AddressError

    from lazily_queue.brokers import UnsupportedAddress

    async with cluster_with_clients() as (_c, addresses):
        client = await connect(addresses, {"name": "web", "token": TOKEN.decode()})
        try:
            await client.queue("q").push(1)
            assert client.member is not None
        finally:
            await client.close()
    with pytest.raises(InvalidConfiguration, match="broker's credentials"):
        connect("nats://127.0.0.1:4222", ("web", TOKEN))
    with pytest.raises(UnsupportedAddress, match="unix:, tcp://, tls://, ws:// or wss://"):
        connect(["unix:a.sock", "nats://127.0.0.1:4222"], ("web", TOKEN))
    with pytest.raises(UnsupportedAddress, match="unix:, tcp://, tls://, ws:// or wss://"):
        connect("amqp://127.0.0.1:5672", ("web", TOKEN))
    assert issubclass(UnsupportedAddress, AddressError)
    with pytest.raises(InvalidConfiguration, match="'name'"):
        connect("unix:x.sock", {"token": "only-a-token"})


async def test_a_purge_and_a_delete_on_a_member_reach_the_clients_mirror() -> None:
    from lazily_queue.replicated import ops

    async with cluster_with_clients() as (c, addresses), client_of(addresses) as client:
        q = client.queue("q")
        for i in range(3):
            await q.push(i)
        await client.barrier()
        len(q)  # mirroring starts with this read
        await client.barrier()
        assert len(q) == 3
        member = c.node(2)
        await member.driver.call(ops.QUEUE_PURGE, ["q"], timeout=5)
        await client.barrier()
        assert len(q) == 0
        await q.push("again")
        await member.driver.call(ops.QUEUE_DELETE, ["q"], timeout=5)
        await client.barrier()
        assert len(q) == 0 and client.view.queue("q") is None


async def test_a_clients_push_with_a_msg_id_applies_once_with_a_members() -> None:
    async with cluster_with_clients() as (c, addresses), client_of(addresses) as client:
        q: QueueCell[Any] = client.queue("orders")
        await q.push("a", msg_id="order-1")
        await q.push("a", msg_id="order-1")
        await c.node(3).queue("orders").push("a", msg_id="order-1")
        jobs: WorkQueueCell = client.work_queue("jobs", visibility_timeout=5)
        assert jobs.pending_len() == 0  # the first read starts mirroring the work queue
        await client.barrier()
        first = await jobs.push("j", msg_id="job-1")
        assert await c.node(2).work_queue("jobs", visibility_timeout=5).push(
            "j", msg_id="job-1") == first
        await client.barrier()
        assert q.len() == 1 and jobs.pending_len() == 1
        assert c.node(3).queue("orders").len() == 1


async def test_a_client_replays_a_topic() -> None:
    from lazily_queue import OffsetOutOfRange

    async with cluster_with_clients() as (c, addresses), client_of(addresses) as client:
        member = c.node(2).topic("news")
        for value in "abc":
            await member.publish(value)
        topic = client.topic("news")
        assert topic.read_stream("r") is None  # the first read starts mirroring the topic
        await client.barrier()
        await topic.subscribe("r", start=1)
        await client.barrier()
        assert topic.read_stream("r") == ["b", "c"]  # the mirror replayed the start
        assert await topic.seek("r", 0) == 0
        await client.barrier()
        assert topic.read_stream("r") == ["a", "b", "c"]
        with pytest.raises(OffsetOutOfRange, match="past the tail"):
            await topic.seek("r", 4)


async def test_a_barrier_made_as_the_client_moves_from_a_follower_to_the_leader_completes(
) -> None:
    """A client linked first to a follower leaves it for the leader once the follower's
    hello names one; a barrier made at once, on the follower's link, ends with that link
    and is made again on the leader's, whichever of the two the client holds when it
    tries again."""
    async with cluster_with_clients() as (c, addresses):
        leader = (await c.wait_for_leader()).node_id
        follower = next(str(i) for i in (1, 2, 3) if str(i) != leader)
        assert await c.node(follower).wait_for_leader() == leader
        for _ in range(3):
            async with client_of([addresses[int(follower) - 1], *addresses]) as client:
                async with asyncio.timeout(10):  # a hang fails the test, not the run
                    await client.barrier(timeout=8)
                assert client.member == leader
