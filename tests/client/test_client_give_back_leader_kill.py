"""Three real node processes, a consume-only client linked to the leader: it pops three
elements, keeps one and gives two back, and the leader is SIGKILLed just after the
give-back left. Its answer lost, the give-back goes again under its number to the next
member, which may not have applied the pop yet (a new leader before it applied its
predecessor's entries) and refuses it at its gate: sent again, it applies once. Every
give-back is answered as applied, and every element not kept is found once."""

from __future__ import annotations

import asyncio
import random
import signal
from collections import Counter
from pathlib import Path

import pytest

from lazily_queue import connect
from tests.cli.node_procs import NodeProc, unix_peers, wait_for, write_config

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

READER, WRITER = "token-of-a-consume-only-reader", "token-of-the-writer"
GRANTS = ('[[client]]\nname = "reader"\ntoken_env = "TOKEN_READER"\nconsume = ["jobs"]\n'
          '[[client]]\nname = "writer"\ntoken_env = "TOKEN_WRITER"\nproduce = ["jobs"]\n'
          'consume = ["jobs"]')
ENV = {"TOKEN_READER": READER, "TOKEN_WRITER": WRITER}
#: Without the give-back going again, about one round in six raised an unknown outcome
#: and lost its two elements.
ROUNDS = 20


def _leader(procs: dict[int, NodeProc]) -> int:
    def known() -> int | None:
        for proc in procs.values():
            if proc.proc.poll() is None:
                leader = proc.status().get("leader")
                if leader:
                    return int(leader)
        return None

    found: int = wait_for(known, 30, "a leader")
    return found


async def test_a_give_back_through_a_killed_leader_applies_once(short_tmp: Path) -> None:
    peers = unix_peers(short_tmp)
    configs = {i: write_config(short_tmp / f"n{i}.toml", i, peers, extra=GRANTS)
               for i in peers}
    procs = {i: NodeProc(configs[i], env=ENV) for i in peers}
    rnd = random.Random(7)
    kept: list[int] = []
    failed: list[BaseException] = []
    pushed = 0
    try:
        for proc in procs.values():
            await asyncio.to_thread(proc.wait_ready)
        addresses = list(peers.values())
        async with connect(addresses, ("writer", WRITER), op_timeout=30,
                           connect_timeout=60) as writer, \
                connect(addresses, ("reader", READER), op_timeout=30,
                        connect_timeout=60) as reader:
            jobs, mine = writer.queue("jobs"), reader.queue("jobs")
            for _ in range(ROUNDS):
                await jobs.push_many(list(range(pushed, pushed + 3)))
                pushed += 3
                await writer.barrier()
                taken = await mine.pop_messages(3, timeout=30)
                kept.append(taken[0].value)
                await reader.barrier()
                victim = await asyncio.to_thread(_leader, procs)
                giving = asyncio.create_task(mine.give_back(taken[1:]))
                await asyncio.sleep(rnd.uniform(0, 0.004))
                procs[victim].proc.send_signal(signal.SIGKILL)
                await asyncio.to_thread(procs[victim].proc.wait)
                try:
                    await giving
                except Exception as exc:  # counted, asserted below
                    failed.append(exc)
                procs[victim] = NodeProc(configs[victim], env=ENV)
                await asyncio.to_thread(procs[victim].wait_ready)
            found: list[int] = []
            while len(kept) + len(found) < pushed:
                try:  # pop until none is left
                    found += await jobs.pop_many(1000, timeout=3)
                except TimeoutError:
                    break
        assert not failed, failed
        counted = Counter(kept + found)
        assert sorted(counted) == list(range(pushed)), sorted(set(range(pushed)) - set(counted))
        assert max(counted.values()) == 1, {v: n for v, n in counted.items() if n > 1}
    finally:
        for proc in procs.values():
            await asyncio.to_thread(proc.terminate)
