"""A consumer waiting on a member silently cut from its cluster (three node processes
linked through relays: :mod:`tests.client.chaos_partition`): the member hears from no
leader and says so when pinged, so a consumer that can reach the others moves there and
pops what the majority took while the cut lasts, each element once (and claims, its
lease acked there); one that reaches
only the cut member is told why its wait found nothing, not a bare ``TimeoutError``."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from lazily_queue import Unreachable, connect
from tests.client.chaos_clients import TOKEN
from tests.client.chaos_partition import IDS, RelayedCluster

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

#: Elements pushed on the majority side while the member is cut.
PUSHED = 20
#: Seconds the cut lasts at most: far past the move the test waits for.
CUT_FOR = 60.0
#: The timeout of a pop waiting on the cut member, the only one its client reaches.
STUCK_TIMEOUT = 10.0


async def test_a_consumer_on_a_cut_member_moves_and_pops_what_the_majority_took(
        short_tmp: Path) -> None:
    cluster = RelayedCluster(short_tmp)
    try:
        await cluster.start()
        leader = await cluster.leader_among(list(IDS), 60)
        cut = next(i for i in IDS if i != leader)
        majority = [i for i in IDS if i != cut]
        waiter_at = await cluster.addresses_for("waiter")
        stuck_at = await cluster.addresses_for("stuck")
        direct = [f"tcp://127.0.0.1:{cluster.client_ports[i]}" for i in majority]
        async with connect([waiter_at[cut], *(waiter_at[i] for i in majority)],
                           ("app", TOKEN), prefer_leader=False) as waiter, \
                connect([stuck_at[cut], *(stuck_at[i] for i in majority)],
                        ("app", TOKEN), prefer_leader=False) as stuck, \
                connect(direct, ("app", TOKEN), op_timeout=30) as producer:
            assert waiter.member == stuck.member == str(cut)
            jobs, stuck_jobs = waiter.queue("jobs"), stuck.queue("jobs")
            for queue in (jobs, stuck_jobs):  # each has its session and its queue's mirror
                await producer.queue("jobs").push("warm-up")
                assert await queue.pop() == "warm-up"
            tasks = waiter.work_queue("tasks")
            await producer.work_queue("tasks").push("warm-up")
            warm = await tasks.claim("w")
            await tasks.ack("w", warm.delivery_id)

            async def pop_all() -> list[str]:
                return [await jobs.pop() for _ in range(PUSHED)]

            popping = asyncio.create_task(pop_all())
            claiming = asyncio.create_task(tasks.claim("w"))  # waits on the mirror at once
            waiting = asyncio.create_task(stuck_jobs.pop(timeout=STUCK_TIMEOUT))
            await asyncio.sleep(0)  # their first takes leave before the barriers
            await waiter.barrier()  # answered after the take: the pop waits on the mirror
            await stuck.barrier()
            assert not (popping.done() or claiming.done() or waiting.done())
            for (i, j), relay in cluster.peer_relays.items():
                if cut in (i, j):
                    relay.sever()
            for i in majority:
                cluster.client_relays["stuck", i].sever()
            pushed = [f"job-{n}" for n in range(PUSHED)]
            for item in pushed:
                await producer.queue("jobs").push(item, msg_id=item)
            await producer.work_queue("tasks").push("task")
            # the consumer pops them while the member is still cut (healed only after)
            done, _ = await asyncio.wait({popping}, timeout=CUT_FOR)
            assert popping in done, "the consumer waited on the cut member"
            popped = popping.result()
            assert sorted(popped) == sorted(pushed)  # none lost, none twice
            assert waiter.member in [str(i) for i in majority]
            done, _ = await asyncio.wait({claiming}, timeout=CUT_FOR)
            assert claiming in done, "the worker waited on the cut member"
            lease = claiming.result()
            assert lease.value == "task"
            await tasks.ack("w", lease.delivery_id)  # its lease holds on the new member

            # the one reaching only the cut member is told why nothing came
            with pytest.raises(Unreachable, match=f"node {cut} has heard from no leader"):
                await waiting
            cluster.heal()
            await producer.barrier()
            assert producer.queue("jobs").len() == 0
            assert not (producer.work_queue("tasks").pending()
                        or producer.work_queue("tasks").in_flight())
    finally:
        await cluster.close()
