"""A client's leader paused (SIGSTOP: a frozen VM, a debugger, a long stall): once its
link has been quiet for ``ping_timeout`` the client goes on through the other members,
which elect a leader meanwhile, instead of dialling the paused member again."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from lazily_queue import CommitTimeout, connect
from tests.cli.node_procs import NodeProc, unix_peers, wait_for, write_config

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

TOKEN = "token-of-the-producer"
CLIENTS = "\n".join(["[[client]]", 'name = "producer"', 'token_env = "TOKEN_PRODUCER"',
                     'produce = ["*"]'])


@contextmanager
def three_members(short_tmp: Path) -> Iterator[tuple[dict[int, str], list[NodeProc]]]:
    """Three node processes serving the producer, ready; every one let go on and
    stopped at the end."""
    peers = unix_peers(short_tmp)
    procs = [NodeProc(write_config(short_tmp / f"n{i}.toml", i, peers, extra=CLIENTS),
                      env={"TOKEN_PRODUCER": TOKEN}) for i in (1, 2, 3)]
    try:
        for proc in procs:
            proc.wait_ready()
        yield peers, procs
    finally:
        for proc in procs:
            if proc.proc.poll() is None:
                os.kill(proc.proc.pid, signal.SIGCONT)
            proc.terminate()


async def test_a_client_whose_leader_is_paused_goes_on_through_the_others(
    short_tmp: Path,
) -> None:
    with three_members(short_tmp) as (peers, procs):

        def agreed() -> str | None:  # right after start a loaded machine may elect again
            named = {p.status().get("leader") for p in procs}
            return named.pop() if len(named) == 1 else None

        leader = int(wait_for(agreed, what="every member naming one leader"))
        follower = next(i for i in (1, 2, 3) if i != leader)
        other = 6 - leader - follower
        # A follower first: the client follows its word to the leader's address.
        addresses = [peers[follower], peers[leader], peers[other]]
        async with connect(addresses, ("producer", TOKEN), op_timeout=8, ping_interval=0.2,
                           ping_timeout=1.0, connect_timeout=5) as client:
            q = client.queue("q")
            await q.push(0)
            assert client.member == str(leader)
            procs[leader - 1].pause()
            started = time.monotonic()
            await asyncio.gather(*(q.push(n) for n in range(1, 33)))
            took = time.monotonic() - started
            assert client.member != str(leader)
            # quiet for 1 s, then the others (not the paused leader again for 5 s more)
            assert took < 5, f"the pushes took {took:.1f} s"


async def test_an_op_timing_out_on_a_paused_member_names_it_and_its_silence(
    short_tmp: Path,
) -> None:
    with three_members(short_tmp) as (peers, procs):
        # A ping_timeout longer than the op's: the client stays with the paused member.
        async with connect(list(peers.values()), ("producer", TOKEN), op_timeout=2,
                           ping_interval=0.2, ping_timeout=60, connect_timeout=5) as client:
            q = client.queue("q")
            await q.push(0)
            member = client.member
            assert member is not None
            procs[int(member) - 1].pause()
            with pytest.raises(CommitTimeout) as failed:
                await q.push(1)
            assert failed.value.applied is None
            assert f"member {member} has sent nothing for" in str(failed.value)
            assert "nor answered a ping" in str(failed.value)
