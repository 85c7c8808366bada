"""A reply lost after the broker applied the operation: the caller is told the outcome
is unknown (``BrokerUnavailable``); the operation is never sent a second time behind
its back (a silent resend pushes twice, or refuses an ack that was applied)."""

from __future__ import annotations

import pytest

from lazily_queue import connect
from lazily_queue.brokers import BrokerUnavailable
from lazily_queue.brokers.servers import BrokerServer

from .conftest import fresh
from .reply_cutter import ReplyCutter


async def test_a_redis_push_whose_reply_is_lost_is_not_sent_again(
        redis_server: BrokerServer) -> None:
    async with ReplyCutter(redis_server.port) as cutter:
        url = f"redis://127.0.0.1:{cutter.port}/0"
        async with connect(url, poll_interval=0.2) as client:
            jobs = client.work_queue(fresh("lost-push"), visibility_timeout=30)
            await jobs.push("first")  # loads the script
            cutter.arm(b"second")
            with pytest.raises(BrokerUnavailable, match=r"the connection dropped while "
                               r"sending .*whether it applied is unknown"):
                await jobs.push("second")
            assert cutter.cut == 1
            await jobs.storage.sync()
            assert [item.value for item in jobs.storage.pending()] == ["first", "second"]


async def test_a_redis_ack_whose_reply_is_lost_is_not_refused(
        redis_server: BrokerServer) -> None:
    async with ReplyCutter(redis_server.port) as cutter:
        url = f"redis://127.0.0.1:{cutter.port}/0"
        async with connect(url, poll_interval=0.2) as client:
            jobs = client.work_queue(fresh("lost-ack"), visibility_timeout=30)
            for value in ("warm", "job"):  # the first ack loads the script
                await jobs.push(value)
            warm = await jobs.claim("w", timeout=10)
            await jobs.ack("w", warm.delivery_id)
            delivery = await jobs.claim("w", timeout=10)
            cutter.arm(b"\r\nack\r\n")
            with pytest.raises(BrokerUnavailable, match=r"whether it applied is unknown"):
                await jobs.ack("w", delivery.delivery_id)
            assert cutter.cut == 1
            await jobs.storage.sync()
            assert (jobs.pending_len(), jobs.in_flight_len()) == (0, 0)

