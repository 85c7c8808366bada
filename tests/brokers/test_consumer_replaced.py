"""A NATS work queue's consumer removed and added again outside this library with the
same settings (``nats consumer rm`` and ``add``), or its stream made anew (a server
restarted without its data): the new consumer numbers its deliveries from 1 again and
hands out at once what the old one had leased. A claim that sees the numbering start
over voids the process's leases from before and gives the new deliveries ids of their
own, so settling an old lease is refused, never applied to another delivery; so is a
settlement after the stream was made anew. No item is lost."""

from __future__ import annotations

import shutil
import time
from types import SimpleNamespace
from typing import Any

import nats
import pytest

from lazily_queue import SettlementRejected, WorkQueueCell, connect
from lazily_queue.brokers.nats_leases import Leases
from lazily_queue.brokers.servers import BrokerServer, NatsServer
from lazily_queue.core.work import Delivery

from .conftest import fresh
from .held_refreshes import hold_refreshes
from .link_cutter import LinkCutter, wait_for

pytestmark = pytest.mark.timeout(60)


async def made_again(url: str, stream: str) -> None:
    """Remove the work queue's consumer and add it again with its own settings."""
    admin = await nats.connect(url)
    try:
        js = admin.jetstream()
        config = (await js.consumer_info(stream, "lq")).config
        await js.delete_consumer(stream, "lq")
        await js.add_consumer(stream, config)
    finally:
        await admin.close()


async def drained(jobs: WorkQueueCell) -> list[Any]:
    """Claim and ack every item left (each claim waits up to 2 s)."""
    values: list[Any] = []
    while True:
        try:
            delivery = await jobs.claim("z", timeout=2)
        except TimeoutError:
            return values
        values.append(delivery.value)
        await jobs.ack("z", delivery.delivery_id)


async def test_an_old_lease_is_not_settled_as_the_new_consumers_delivery(
    nats_server: BrokerServer,
) -> None:
    """The new consumer numbers from 1 again: the lease from before (delivery 2, item
    ``b``) is void, and the new deliveries (``b`` again, then ``c``) get ids of their
    own, so its ack is refused instead of acking ``c``, which no worker has done. The
    refreshes are held meanwhile: the server's announcement of the deletion tells (or,
    missed, the claim handed number 2 again: ``test_delivery_ids_stay_unique_...``)."""
    async with connect(nats_server.url, poll_interval=0.2, timeout=3) as client:
        jobs = client.work_queue(fresh("again-seq"), visibility_timeout=30, max_deliveries=3)
        for value in "abc":
            await jobs.push(value)
        first = await jobs.claim("w", timeout=5)
        held = await jobs.claim("w", timeout=5)
        await jobs.ack("w", first.delivery_id)
        storage: Any = jobs.storage
        await storage.sync()
        go_on = hold_refreshes(storage)
        await made_again(nats_server.url, storage.stream)
        again = await jobs.claim("w", timeout=5)
        third = await jobs.claim("w", timeout=5)
        assert (again.value, third.value) == ("b", "c")
        assert len({held.delivery_id, again.delivery_id, third.delivery_id}) == 3
        with pytest.raises(SettlementRejected):
            await jobs.ack("w", held.delivery_id)
        await jobs.nack("w", third.delivery_id)  # c not done: delivered again
        await jobs.ack("w", again.delivery_id)
        go_on.set()
        assert await drained(jobs) == ["c"]


async def test_a_lease_is_not_acked_on_the_stream_a_server_made_anew() -> None:
    """nats-server restarted without its data, and another process declares the work
    queue again and pushes before this one settles a lease taken before: the settlement
    waits for the declaration the reconnection asked for, which finds another stream,
    so it is refused instead of acking the new stream's message of the same sequence
    (which no worker has done). The refreshes are held, so only the settlement can
    tell."""
    async with NatsServer() as server, \
            connect(server.url, poll_interval=0.2, timeout=3) as client:
        name = fresh("again-wiped")
        jobs = client.work_queue(name, visibility_timeout=30, max_deliveries=3)
        await jobs.push("old")
        delivery = await jobs.claim("w", timeout=5)
        storage: Any = jobs.storage
        go_on = hold_refreshes(storage)
        nc = storage._backend.nc
        await server.stop(kill=True)
        shutil.rmtree(server.directory / "jetstream")
        await server.start()
        async with connect(server.url, timeout=3) as other:
            await other.work_queue(name, visibility_timeout=30, max_deliveries=3).push("new")
        await wait_for(lambda: nc.is_connected, "the client to reconnect")
        with pytest.raises(SettlementRejected):
            await jobs.ack("w", delivery.delivery_id)
        go_on.set()
        assert await drained(jobs) == ["new"]


async def test_a_consumer_made_again_while_disconnected_voids_the_leases(
    nats_server: BrokerServer,
) -> None:
    """Made again while the process's link is cut (the deletion announced to no one
    here): the declaration after the reconnection finds it counting fewer deliveries
    than it handed this process, so the lease taken before is void, its ack refused
    before it is sent (acked on the new consumer, which never delivered it, it would
    leave nats-server 2.9 not answering claims while nothing else is pending), and its
    item is claimed again."""
    async with LinkCutter(nats_server.port) as link, \
            connect(link.url, poll_interval=0.2, timeout=3) as client:
        jobs = client.work_queue(fresh("again-cut"), visibility_timeout=30, max_deliveries=3)
        await jobs.push("job")
        delivery = await jobs.claim("w", timeout=5)
        storage: Any = jobs.storage
        nc = storage._backend.nc
        link.cut()
        await wait_for(lambda: not nc.is_connected, "the client to notice the cut")
        await made_again(nats_server.url, storage.stream)
        link.mend()
        await wait_for(lambda: nc.is_connected, "the client to reconnect")
        with pytest.raises(SettlementRejected):
            await jobs.ack("w", delivery.delivery_id)
        assert jobs.in_flight_len() == 0
        assert await drained(jobs) == ["job"]


async def test_a_consumer_deleted_and_added_while_connected_voids_the_leases(
    nats_server: BrokerServer,
) -> None:
    """The server announces the deletion: the lease taken before is void (not counted
    in flight) though no claim or refresh saw the new consumer (they are held)."""
    async with connect(nats_server.url, poll_interval=0.2, timeout=3) as client:
        jobs = client.work_queue(fresh("again-told"), visibility_timeout=30, max_deliveries=3)
        await jobs.push("job")
        delivery = await jobs.claim("w", timeout=5)
        storage: Any = jobs.storage
        go_on = hold_refreshes(storage)
        await made_again(nats_server.url, storage.stream)
        await wait_for(lambda: not storage.in_flight(), "the deletion to be announced")
        with pytest.raises(SettlementRejected):
            await jobs.ack("w", delivery.delivery_id)
        go_on.set()
        assert await drained(jobs) == ["job"]


def counting(delivered: int) -> Any:
    """A consumer's info as :meth:`Leases.counted` reads it."""
    return SimpleNamespace(delivered=SimpleNamespace(consumer_seq=delivered))


def test_delivery_ids_stay_unique_across_consumers() -> None:
    leases = Leases()
    seen = leases.seen()
    assert leases.counted(counting(0), seen) is False
    assert leases.stream("t1") is False
    for sequence in (1, 5, 3):  # concurrent claims may handle them out of order
        delivery_id, again = leases.delivered(sequence)
        assert (delivery_id, again) == (sequence, False)
        leases[delivery_id] = lease(delivery_id)
    assert leases.delivered(5) == (10, True)  # a live lease's number: started over
    assert leases.delivered(2) == (7, False)
    seen = leases.seen()
    assert leases.delivered(4) == (9, False)
    assert leases.counted(counting(5), seen) is False  # read after seen(): 5 by then
    assert leases.counted(counting(4), seen) is True  # fewer: numbered from 1 again
    assert leases.delivered(1) == (11, False)
    assert leases.stream("t1") is False
    assert leases.stream("t2") is True  # another stream: numbered above again
    assert leases.delivered(1) == (12, False)


def lease(delivery_id: int) -> Any:
    return (None, Delivery(delivery_id, delivery_id, "v", "w", 1, time.time() + 60))


def test_a_lease_whose_settlement_failed_is_put_back_unless_void_meanwhile() -> None:
    leases = Leases()
    for delivery_id in (1, 2):
        leases[delivery_id] = lease(delivery_id)
    with pytest.raises(OSError), leases.taken(1, leases[1]):
        assert 1 not in leases  # a settlement of it meanwhile is refused
        raise OSError("the ack's outcome is unknown")
    assert 1 in leases  # the caller may settle it again
    with pytest.raises(OSError), leases.taken(2, leases[2]):
        leases.void("the consumer was made again")
        raise OSError("the ack's outcome is unknown")
    assert not leases
