"""A loop that breaks out of ``deliveries()`` or ``async for x in q`` and then closes its
client: the acks of its last blocks commit, and the elements it took and did not hand
out go back to the head, before the client unlinks (at the ``break`` they are only
queued or held, and the iterator's finalizer runs after the close)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from lazily_queue import ClientAccess, ClientGrant, Credentials, Node, connect

TOKEN = b"token-of-the-workers"


async def work_off(client: Any, name: str) -> None:
    """Push three jobs, then work them off with the default prefetch (background acks)
    and break out of the loop right after the last one, as a script does."""
    jobs = client.work_queue(name)
    for n in range(3):
        await jobs.push(n)
    done = 0
    async for job in jobs.deliveries("w1"):
        async with job:
            done += 1
        if done == 3:
            break


async def take_one(client: Any, name: str) -> None:
    """Push ten elements, take the first with ``async for`` (which prefetches the
    others) and break out of the loop."""
    queue = client.queue(name)
    await queue.push_many(list(range(10)))
    async for _ in queue:
        break


async def settle_one_by_hand(client: Any, name: str) -> None:
    """Push ten jobs, take the first from ``deliveries()`` (which prefetches others),
    ack it by hand and break out of the loop."""
    jobs = client.work_queue(name)
    await jobs.push_many(list(range(10)))
    async for job in jobs.deliveries("w2"):
        await job.ack()
        break


async def test_closing_after_a_break_settles_what_the_loops_held() -> None:
    path = Path(tempfile.mkdtemp(prefix="lqa-", dir="/tmp"))
    grant = ClientGrant("worker", TOKEN, produce=["*"], consume=["*"])
    member = Node(1, data_dir=None, durability="none", listen=f"unix://{path}/n1.sock",
                  secret=b"the-cluster-secret", clients=ClientAccess([grant]))
    try:
        async with member:
            await member.wait_for_leader()
            async with connect([f"unix://{path}/n1.sock"],
                               Credentials("worker", TOKEN)) as client:
                await work_off(client, "jobs")
                await take_one(client, "items")
                await settle_one_by_hand(client, "leases")
            jobs = member.work_queue("jobs")
            assert (jobs.pending_len(), jobs.in_flight_len()) == (0, 0)
            items = member.queue("items")
            assert (items.len(), items.head()) == (9, 1)  # given back, in order
            leases = member.work_queue("leases")
            assert (leases.pending_len(), leases.in_flight_len()) == (9, 0)  # released
    finally:
        shutil.rmtree(path, ignore_errors=True)
