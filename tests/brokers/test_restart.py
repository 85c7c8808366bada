"""A broker restarted mid-run: operations resume and nothing acknowledged is lost.

A producer pushes numbered items (a push that raised is retried, so an item may be
stored twice) while three workers claim and ack; the broker is killed (SIGKILL) and
started again in the middle. The ledger check: every push that returned is acked by a
worker at the end (or its ack's outcome is unknown: the broker may have applied it and
died before the reply arrived), and the run finished (claims and acks resumed after the
restart, the broker's work queue drained). ``test_restart_history.py`` checks a queue's
history through a restart with the simulator's checker. A killed process keeps what it
wrote in the page cache, so this does not show the loss a power cut can cause to a
JetStream that acknowledges before fsync (see the README).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from lazily_queue import SettlementRejected, connect
from lazily_queue.brokers import BrokerUnavailable
from lazily_queue.brokers.servers import BrokerServer, NatsServer, RedisServer, find_binary
from lazily_queue.reactive import wait_until

COUNT = 300


@pytest.mark.parametrize("kind", ["nats", "redis"])
async def test_restart_mid_run_loses_nothing_acknowledged(kind: str) -> None:
    cls: type[BrokerServer] = RedisServer if kind == "redis" else NatsServer
    if find_binary(cls.binary) is None:
        pytest.skip(f"{cls.binary} is not installed")
    server = cls()
    # nats: a request whose reply the kill lost waits for its timeout (default 10 s)
    options: dict[str, Any] = {"timeout": 3} if kind == "nats" else {}
    async with server:
        async with connect(server.url, poll_interval=0.2, **options) as client:
            jobs = client.work_queue("restart", visibility_timeout=1.0, max_deliveries=1000)
            pushed: set[int] = set()
            acked: set[int] = set()
            #: Acks that raised BrokerUnavailable: applied or not, the reply was lost.
            maybe_acked: set[int] = set()
            retries = {"push": 0, "claim": 0}
            stop = asyncio.Event()
            progress = asyncio.Event()

            async def until(condition: Any) -> None:
                while not condition():
                    progress.clear()
                    await progress.wait()

            async def produce() -> None:
                for n in range(COUNT):
                    while True:
                        try:
                            await jobs.push(n)
                            break
                        except BrokerUnavailable:
                            retries["push"] += 1
                            await asyncio.sleep(0.05)
                    pushed.add(n)
                    progress.set()

            async def work(worker: str) -> None:
                while not stop.is_set():
                    try:
                        delivery = await jobs.claim(worker, timeout=0.5)
                    except TimeoutError:
                        continue
                    except BrokerUnavailable:
                        retries["claim"] += 1
                        await asyncio.sleep(0.05)
                        continue
                    try:
                        await jobs.ack(worker, delivery.delivery_id)
                    except BrokerUnavailable:
                        # Applied before the broker died, or not (then the lease
                        # expires and the item comes again).
                        maybe_acked.add(delivery.value)
                        progress.set()
                        continue
                    except SettlementRejected:
                        continue  # the lease expired first: the item comes again
                    acked.add(delivery.value)
                    progress.set()

            workers = [asyncio.create_task(work(f"w{i}")) for i in range(3)]
            producer = asyncio.create_task(produce())
            try:
                await until(lambda: len(pushed) >= COUNT // 3)
                assert len(pushed) < COUNT  # the restart lands mid-run
                await server.restart(kill=True)
                await asyncio.wait_for(producer, 120)
                await asyncio.wait_for(until(lambda: pushed <= acked | maybe_acked), 120)
                await wait_until(lambda: jobs.pending_len() == 0 and jobs.in_flight_len() == 0,
                                 context=jobs.ctx, timeout=60)
            finally:
                stop.set()
                producer.cancel()
                await asyncio.gather(producer, *workers, return_exceptions=True)
            assert pushed == set(range(COUNT))
            assert pushed <= acked | maybe_acked, f"lost: {sorted(pushed - acked)[:20]}"
            assert len(maybe_acked) <= 3 * 2, maybe_acked  # a few acks in flight at the kill

