"""A NATS stream that is listed but does not answer yet gets no consumer and no use.

nats-server before 2.9.15 lists a stream another connection is still creating (to a
stream info, and to an identical create) before it is set up; a consumer added to it
then never answers a pull nor delivers a message, so every pop of that queue timed
out. Such a stream drops requests to its direct get without an answer: here a proxy
drops them until the test opens it, and the declaration must wait for an answer."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from lazily_queue import QueueCell
from lazily_queue.brokers.errors import BrokerUnavailable
from lazily_queue.brokers.servers import BrokerServer
from lazily_queue.client.brokers import open_provider

from .conftest import fresh
from .request_gate import RequestGate


def _storage(provider: Any, kind: str, name: str) -> Any:
    if kind == "work_queue":
        return provider.work_queue(name, visibility_timeout=30, max_deliveries=3)
    return getattr(provider, kind)(name)


def _stream(kind: str, name: str) -> str:
    return {"queue": "LQ_Q_", "work_queue": "LQ_W_", "topic": "LQ_T_"}[kind] + name


@pytest.mark.parametrize("kind", ["queue", "work_queue", "topic"])
async def test_a_stream_is_used_only_once_it_answers(nats_server: BrokerServer,
                                                     kind: str) -> None:
    name = fresh("unready")
    async with RequestGate(nats_server.port, f"$JS.API.DIRECT.GET.{_stream(kind, name)}") \
            as gate:
        provider = await open_provider(gate.url, poll_interval=30.0)
        try:
            storage = _storage(provider, kind, name)
            declaring = asyncio.ensure_future(storage.declare())
            for _ in range(1000):  # up to 10 s for the declaration to ask twice
                if gate.dropped >= 2 or declaring.done():
                    break
                await asyncio.sleep(0.01)
            assert not declaring.done(), "declared without an answer from the stream"
            assert gate.dropped >= 2
            assert not [s for s in gate.published if s.startswith("$JS.API.CONSUMER.")]
            gate.open()
            await asyncio.wait_for(declaring, 10)
            await storage.sync()
            if kind == "queue":
                cell: QueueCell[Any] = QueueCell(storage)
                await cell.push("item")
                assert await cell.pop(timeout=10) == "item"
        finally:
            await provider.close()


async def test_a_stream_that_never_answers_is_reported(nats_server: BrokerServer) -> None:
    name = fresh("unready")
    async with RequestGate(nats_server.port, f"$JS.API.DIRECT.GET.LQ_Q_{name}") as gate:
        provider = await open_provider(gate.url, poll_interval=30.0, timeout=0.5)
        try:
            storage = provider.queue(name)
            with pytest.raises(BrokerUnavailable, match=r"^nats at \S+: stream LQ_Q_unready-\d+ "
                               r"exists but did not answer within 0\.5s .* nothing was added"):
                await storage.declare()
            assert not [s for s in gate.published if s.startswith("$JS.API.CONSUMER.")]
            gate.open()
            await storage.declare()
            cell: QueueCell[Any] = QueueCell(storage)
            await cell.push("item")
            assert await cell.pop(timeout=10) == "item"
        finally:
            await provider.close()
