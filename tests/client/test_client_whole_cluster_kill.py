"""Every member SIGKILLed at once while a client has hundreds of pushes in flight, then
restarted: the client's session and the cluster's dedup window survive, so each push
the client retries applies once, and a second producer pushing every id again adds
nothing."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import pytest

from lazily_queue import connect
from tests.cli.node_procs import NodeProc, unix_peers, write_config

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

TOKEN = "token-of-the-producer"
CLIENTS = "\n".join(["[[client]]", 'name = "producer"', 'token_env = "TOKEN_PRODUCER"',
                     'produce = ["*"]', 'consume = ["*"]'])
PUSHES = 1500


def _start(configs: list[Path]) -> list[NodeProc]:
    procs = [NodeProc(config, env={"TOKEN_PRODUCER": TOKEN}) for config in configs]
    for proc in procs:
        proc.wait_ready()
    return procs


async def test_a_whole_cluster_killed_under_pushes_in_flight_loses_and_doubles_nothing(
    short_tmp: Path,
) -> None:
    peers = unix_peers(short_tmp)
    configs = []
    for i in peers:
        config = write_config(short_tmp / f"n{i}.toml", i, peers, extra=CLIENTS)
        config.write_text(config.read_text().replace('durability = "none"\n', ""))  # fsync
        configs.append(config)
    procs = await asyncio.to_thread(_start, configs)
    addresses = list(peers.values())
    try:
        acked: list[int] = []
        killed = asyncio.Event()
        gate = asyncio.Semaphore(256)

        async def kill_all_and_restart() -> None:
            nonlocal procs
            for proc in procs:
                proc.proc.kill()
            for proc in procs:
                await asyncio.to_thread(proc.proc.wait)
            await asyncio.sleep(0.5)
            procs = await asyncio.to_thread(_start, configs)

        async with connect(addresses, ("producer", TOKEN), op_timeout=60,
                           connect_timeout=60) as client:
            q = client.queue("orders")
            restarted: list[asyncio.Task[None]] = []

            async def push(values: list[int]) -> None:
                async with gate:
                    if len(values) == 1:
                        await q.push(values[0], msg_id=f"order-{values[0]}")
                    else:
                        await q.push_many(values)
                    acked.extend(values)
                    if len(acked) >= PUSHES // 3 and not killed.is_set():
                        killed.set()
                        restarted.append(asyncio.create_task(kill_all_and_restart()))

            # of each hundred, sixty single pushes with an id and four push_many of ten
            runs: list[list[int]] = []
            for block in range(0, PUSHES, 10):
                ten = list(range(block, block + 10))
                runs += [[n] for n in ten] if block % 100 < 60 else [ten]
            await asyncio.gather(*(push(values) for values in runs))
            await asyncio.gather(*restarted)
            assert killed.is_set() and len(restarted) == 1
        async with connect(addresses, ("producer", TOKEN), op_timeout=30) as again:
            q = again.queue("orders")
            for n in range(PUSHES):  # every id pushed again: the window remembers them
                if n % 100 < 60:
                    await q.push(n, msg_id=f"order-{n}")
            q.len()
            await again.barrier()
            found: list[int] = []
            while q.len():
                found.extend(await q.pop_many(1000))
                await again.barrier()
        assert sorted(acked) == list(range(PUSHES))
        doubled = {n: k for n, k in Counter(found).items() if k > 1}
        assert not doubled and sorted(found) == list(range(PUSHES)), (doubled, len(found))
    finally:
        for proc in procs:
            await asyncio.to_thread(proc.terminate)
    assert not [p.stderr() for p in procs if "Traceback" in p.stderr()]
