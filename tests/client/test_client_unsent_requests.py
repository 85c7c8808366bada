"""A request this process still holds, in part, when its operation's deadline comes never
reached the member: the operation fails saying it was not applied (``applied`` False),
and the member, reading again, never applies it (the link was closed, dropping the rest).
Those whose requests had left may have applied (``applied`` None)."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest

from lazily_queue import OperationFailed, connect
from tests.cli.node_procs import NodeProc, unix_peers, write_config

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

TOKEN = "token-of-the-producer"
CLIENTS = "\n".join(["[[client]]", 'name = "producer"', 'token_env = "TOKEN_PRODUCER"',
                     'produce = ["*"]', 'consume = ["*"]'])
#: Pushes of this many bytes each, more in all than the socket's and the link's buffers.
SIZE, COUNT = 900_000, 12


@contextmanager
def member_process(tmp: Path) -> Iterator[tuple[NodeProc, str]]:
    """A one-member cluster's node process serving the producer, and its address;
    continued if a test left it paused, then stopped."""
    peers = unix_peers(tmp, (1,))
    member = NodeProc(write_config(tmp / "n1.toml", 1, peers, extra=CLIENTS),
                      env={"TOKEN_PRODUCER": TOKEN})
    try:
        member.wait_ready()
        yield member, peers[1]
    finally:
        with suppress(ProcessLookupError):
            os.kill(member.proc.pid, signal.SIGCONT)
        member.terminate()


async def test_requests_a_paused_member_never_read_fail_as_not_applied(
    short_tmp: Path,
) -> None:
    with member_process(short_tmp) as (member, address):
        async with connect([address], ("producer", TOKEN), op_timeout=3, ping_interval=1,
                           ping_timeout=60) as client:
            q = client.queue("q")
            await q.push(b"first")
            member.pause()
            small = asyncio.ensure_future(q.push(b"small"))
            await asyncio.sleep(0.2)  # its request left whole, into the socket's buffer
            values = [bytes([n]) * SIZE for n in range(COUNT)]
            outcomes = await asyncio.gather(*(q.push(v) for v in values),
                                            return_exceptions=True)
            assert all(isinstance(o, OperationFailed) for o in outcomes), outcomes
            with pytest.raises(OperationFailed) as sent:
                await small
            assert sent.value.applied is None, str(sent.value)
            unsent = [n for n, o in enumerate(outcomes)
                      if isinstance(o, OperationFailed) and o.applied is False]
            assert unsent, [str(o) for o in outcomes]
            assert "was not applied" in str(outcomes[unsent[0]])
            os.kill(member.proc.pid, signal.SIGCONT)
            q.len()  # read: mirrored from now on
            await client.barrier()
            popped = await q.pop_many(q.len())
            assert popped[0] == b"first"
            applied = {value[0] for value in popped[1:] if len(value) == SIZE}
            assert not applied & set(unsent), (sorted(applied), unsent)


async def test_requests_still_held_when_a_link_is_lost_were_not_applied(
    short_tmp: Path,
) -> None:
    """The link to a paused member closes for its silence (``ping_timeout``) while the
    big requests are still held here: at their deadline, no member reached, they were
    not applied; the small one sent before may have."""
    with member_process(short_tmp) as (member, address):
        async with connect([address], ("producer", TOKEN), op_timeout=4, ping_interval=0.2,
                           ping_timeout=1, connect_timeout=1) as client:
            q = client.queue("q")
            await q.push(b"first")
            member.pause()
            small = asyncio.ensure_future(q.push(b"small"))
            await asyncio.sleep(0.2)
            outcomes = await asyncio.gather(*(q.push(bytes([n]) * SIZE) for n in range(4)),
                                            return_exceptions=True)
            assert all(isinstance(o, OperationFailed) and o.applied is False
                       for o in outcomes), [str(o) for o in outcomes]
            assert "no member reachable" in str(outcomes[0])
            with pytest.raises(OperationFailed) as sent:
                await small
            assert sent.value.applied is None, str(sent.value)
