"""One client process of the client chaos harness (``tests/client/chaos_clients.py``).

``python chaos_client.py ROLE NAME ADDRESS...`` with the client's token in
``CHAOS_TOKEN``; it prints one JSON object a line (``t`` the wall-clock time):
``ready``, ``member`` (the member it links to, on every change), ``acked`` (a push or
publish committed, with its id), ``popped``, ``claimed``, ``settled`` (an ack answered,
``duplicate`` for a receipt again), ``got`` (a subscriber's element) and ``error``
(its type, ``applied`` and message). Roles: ``push-queue``, ``push-work`` and
``publish`` produce with a ``msg_id`` each, retried with that id until acknowledged;
``pop`` pops, ``work`` claims and acks with leases, ``subscribe`` streams a durable
subscriber. SIGTERM stops it after the operations under way.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from typing import Any

from lazily_queue import connect

LANES = 4
LEASE = 3.0
PACE = {"push-queue": 0.05, "push-work": 0.5, "publish": 0.05}
WORK = 0.2


def say(event: str, **fields: Any) -> None:
    print(json.dumps({"ev": event, "t": time.time(), **fields}), flush=True)


def failed(op: str, exc: BaseException) -> None:
    say("error", op=op, type=type(exc).__name__,
        mro=[c.__name__ for c in type(exc).__mro__],
        applied=getattr(exc, "applied", "n/a"), msg=str(exc)[:1200])


async def produce(client: Any, role: str, name: str, stop: asyncio.Event) -> None:
    if role == "push-work":
        cell = client.work_queue("jobs", visibility_timeout=LEASE, max_deliveries=100)
    else:
        cell = client.queue("q") if role == "push-queue" else client.topic("t")
    send = cell.publish if role == "publish" else cell.push

    async def lane(k: int) -> None:
        n = 0
        while not stop.is_set():
            ident = f"{name}-{k}-{n}"
            while True:
                try:
                    await send(ident, msg_id=ident)
                    break
                except Exception as exc:  # every failure is listed, then retried
                    failed("push", exc)
                    await asyncio.sleep(0.05)
            say("acked", id=ident)
            n += 1
            await asyncio.sleep(PACE[role])

    await asyncio.gather(*(lane(k) for k in range(LANES)))


async def pop(client: Any, stop: asyncio.Event) -> None:
    q = client.queue("q")
    while not stop.is_set():
        try:
            value = await q.pop(timeout=0.5)
        except TimeoutError:
            continue
        except Exception as exc:
            failed("pop", exc)
            await asyncio.sleep(0.05)
            continue
        say("popped", id=value)


async def work(client: Any, name: str, stop: asyncio.Event) -> None:
    jobs = client.work_queue("jobs", visibility_timeout=LEASE, max_deliveries=100)
    while not stop.is_set():
        try:
            delivery = await jobs.claim(name, timeout=0.5)
        except TimeoutError:
            continue
        except Exception as exc:
            failed("claim", exc)
            await asyncio.sleep(0.05)
            continue
        say("claimed", id=delivery.value, item=delivery.item_id,
            attempt=delivery.attempt, delivery=delivery.delivery_id)
        await asyncio.sleep(WORK)  # the job's work
        while True:
            try:
                receipt = await jobs.ack(name, delivery.delivery_id)
            except Exception as exc:
                failed("ack", exc)
                if type(exc).__name__ == "SettlementRejected":
                    break
                await asyncio.sleep(0.05)
                continue
            say("settled", id=delivery.value, item=delivery.item_id,
                duplicate=bool(getattr(receipt, "duplicate", False)))
            break


async def subscribe(client: Any, name: str, stop: asyncio.Event) -> None:
    topic = client.topic("t")
    while True:
        try:
            await topic.subscribe(name)
            break
        except Exception as exc:
            failed("subscribe", exc)
            await asyncio.sleep(0.05)
    say("subscribed")

    async def read() -> None:
        while True:
            try:
                async for value in topic.stream(name, batch=16):
                    say("got", id=value)
            except Exception as exc:
                failed("stream", exc)
                await asyncio.sleep(0.05)

    reader = asyncio.create_task(read())
    await stop.wait()
    reader.cancel()


async def watch_member(client: Any) -> None:
    shown = None
    while True:
        if client.member != shown:
            shown = client.member
            say("member", member=shown)
        await asyncio.sleep(0.02)


async def main() -> None:
    role, name, addresses = sys.argv[1], sys.argv[2], sys.argv[3:]
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with connect(addresses, ("app", os.environ["CHAOS_TOKEN"]),
                       connect_timeout=60,
                       op_timeout=float(os.environ.get("CHAOS_OP_TIMEOUT", "10")),
                       prefer_leader=os.environ.get("CHAOS_PREFER_LEADER") == "1") as client:
        watcher = asyncio.create_task(watch_member(client))
        say("ready")
        if role in ("push-queue", "push-work", "publish"):
            await produce(client, role, name, stop)
        elif role == "pop":
            await pop(client, stop)
        elif role == "work":
            await work(client, name, stop)
        else:
            await subscribe(client, name, stop)
        watcher.cancel()
    say("stopped")


if __name__ == "__main__":
    asyncio.run(main())
