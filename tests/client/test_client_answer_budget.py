"""The answers a member queues for all its client links are bounded: links that do not
read (each within its own limit, watching an object whose state and ops they never
take) are disconnected once the member holds more than its bound for them, the link
that took bytes least recently first, and a client that reads is served meanwhile."""

from __future__ import annotations

import asyncio
import logging

import cbor2
import pytest

from lazily_queue import Credentials, connect
from lazily_queue.client import protocol as P
from tests.client.one_member import TOKEN, client_stats, linked, one_member, until

pytestmark = pytest.mark.timeout(60)

VALUE = b"v" * 1_000_000
#: Room for two states of the queue, as the member's own bound has for the largest.
BOUND = 8 * 1024 * 1024


async def test_links_that_do_not_read_are_cut_at_the_members_bound_stalest_first(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "lazily_queue.client.connection")
    async with one_member() as node, connect(node.listen or "", Credentials("web", TOKEN)) \
            as reader:
        assert node.clients is not None
        node.clients.answers.limit = BOUND
        jobs = reader.queue("jobs")
        for _ in range(4):  # a state of 4 MB: more than a link's buffers take
            await jobs.push(VALUE)
        stalled = []
        for rid in range(2, 8):  # each holds the state, none reads it
            stream = await linked(node)
            await stream.send(cbor2.dumps([rid, P.WATCH, "queue", "jobs"]))
            stalled.append(stream)
            await asyncio.sleep(0.2)
        # how much of each state the loop's transports take in varies (uvloop's more)
        await until(lambda: client_stats(node)["answers_closed"] >= 1, 20)
        assert client_stats(node)["answers_queued"] <= BOUND
        closed = client_stats(node)["answers_closed"]
        jobs.len()  # the reader mirrors the queue: its state goes over the bound
        await reader.barrier()
        await until(lambda: jobs.len() == 4, 20)  # the stalled links were cut, not the reader
        assert client_stats(node)["answers_closed"] > closed
        await jobs.push(VALUE)
        await reader.barrier()
        assert jobs.len() == node.queue("jobs").len() == 5
        cut = client_stats(node)["answers_closed"]
        assert caplog.text.count("does not read its answers") == cut
        assert client_stats(node)["connections"] == 1 + 6 - cut  # the reader's first link
        for stream in stalled:
            await stream.aclose()
        await until(lambda: client_stats(node)["answers_queued"] == 0, 20)
