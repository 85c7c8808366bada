"""One program, every backend: the same scenario on a local cell, a one-member cluster
and each broker gives the same trace (results, errors by type, readers), apart from
what the README documents as different (ids, the order of redeliveries on a broker).

Each scenario records what a user sees; the local run is the reference."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from lazily_queue import (
    InvalidConfiguration,
    Limits,
    QueueCell,
    QueueClosed,
    SettlementRejected,
    TopicCell,
    UnknownSubscriber,
    WorkQueueCell,
    connect,
    testing,
)
from lazily_queue.brokers.servers import BrokerServer

from .conftest import fresh

Trace = list[tuple[str, Any]]


async def _outcome(call: Awaitable[Any]) -> Any:
    try:
        return await call
    except Exception as exc:  # the type is the observation
        return f"raised {type(exc).__name__}"


async def _synced(cell: Any) -> None:
    """Wait for a broker's mirror (its readers count what this process did)."""
    sync = getattr(cell.storage, "sync", None)
    if sync is not None:
        await sync()


async def _not_waiting(q: QueueCell[Any]) -> Trace:
    """The calls that do not wait make their attempt whatever their timeout (0
    included) and refuse one that is no number of seconds; they leave ``q`` empty."""
    trace: Trace = [("offer, timeout 0", str(await q.offer("y", timeout=0)))]
    trace.append(("poll, timeout 0", await _outcome(q.poll(timeout=0))))
    await q.offer("m")
    if q.capabilities.messages:
        taken = await _outcome(q.poll_messages(1, timeout=0))
        taken = [m.value for m in taken] if isinstance(taken, list) else taken
    else:  # a broker queue has no message pops (README): its poll stands in
        taken = [await q.poll()]
    trace.append(("poll_messages, timeout 0", taken))
    await q.offer("n")
    trace.append(("poll_many, timeout 0", await _outcome(q.poll_many(2, timeout=0))))
    trace.append(("poll empty, timeout 0", str(await q.poll(timeout=0))))
    for bad in ("soon", float("nan")):
        calls: dict[str, Callable[[Any], Awaitable[Any]]] = {
            "offer": lambda t: q.offer("v", timeout=t), "poll": lambda t: q.poll(timeout=t),
            "poll_many": lambda t: q.poll_many(1, timeout=t),
            "poll_messages": lambda t: q.poll_messages(1, timeout=t),
            "close": lambda t: q.close(timeout=t)}
        for name, call in calls.items():
            trace.append((f"{name}, timeout {bad!r}", await _outcome(call(bad))))
    trace.append(("still empty and open", (str(await q.poll()), q.is_closed())))
    return trace


async def queue_scenario(open_queue: Callable[..., QueueCell[Any]]) -> Trace:
    q = open_queue(fresh("parity-q"), capacity=2)
    trace: Trace = [("poll empty", str(await q.poll()))]
    trace.append(("pop empty, timeout 0", await _outcome(q.pop(timeout=0))))
    trace.append(("push, timeout 0", await _outcome(q.push("z", timeout=0))))
    trace.append(("pop, timeout 0", await _outcome(q.pop(timeout=0))))
    trace.extend(await _not_waiting(q))
    for value in ("a", ("b", 1)):
        trace.append(("offer", await q.offer(value)))
    trace.append(("offer full", str(await q.offer("c"))))
    trace.append(("push full, timeout 0", await _outcome(q.push("c", timeout=0))))
    await _synced(q)
    trace.append(("readers", (q.len(), q.is_empty(), q.is_full(), q.head())))
    trace.append(("pop", await q.pop(timeout=10)))
    trace.append(("pop_many", await q.pop_many(5)))
    await q.push("d")
    await q.close()
    await q.close()
    trace.append(("offer closed", str(await q.offer("e"))))
    trace.append(("drain", await q.pop(timeout=10)))
    trace.append(("poll closed", str(await q.poll())))
    trace.append(("pop closed", await _outcome(q.pop(timeout=10))))
    await _synced(q)
    trace.append(("readers closed", (q.len(), q.is_empty(), q.is_full(), q.is_closed())))
    return trace


async def work_scenario(open_work: Callable[..., WorkQueueCell]) -> Trace:
    jobs = open_work(fresh("parity-w"), visibility_timeout=30, max_deliveries=2)
    trace: Trace = [("poll empty", await jobs.poll("w1"))]
    trace.append(("claim empty, timeout 0", await _outcome(jobs.claim("w1", timeout=0))))
    await jobs.push("x")
    first = await jobs.claim("w1", timeout=0)
    trace.append(("claim", (first.value, first.worker, first.attempt)))
    for settle in (jobs.ack, jobs.nack, jobs.extend):
        for worker in ("w2", "", "lq.w1"):  # another worker; names no claim leases to
            trace.append(("other worker", worker,
                          await _outcome(settle(worker, first.delivery_id))))
        trace.append(("bad id", await _outcome(settle("w1", str(first.delivery_id)))))
    await jobs.nack("w1", first.delivery_id)
    second = await jobs.claim("w1", timeout=10)
    trace.append(("redelivered", (second.value, second.attempt,
                                  second.item_id == first.item_id,
                                  second.delivery_id != first.delivery_id)))
    await jobs.nack("w1", second.delivery_id)  # a node answers a repeat with its receipt
    await _synced(jobs)
    trace.append(("readers", (jobs.pending_len(), jobs.is_empty(), jobs.in_flight_len(),
                              jobs.dead_letter_len())))
    trace.append(("dead letters", [(d.value, d.attempts, d.reason.value)
                                   for d in jobs.dead_letters()]))
    trace.append(("redrive", await jobs.redrive()))
    third = await jobs.claim("w1", timeout=10)
    trace.append(("after redrive", (third.value, third.attempt)))
    await jobs.ack("w1", third.delivery_id)
    await _synced(jobs)
    trace.append(("readers done", (jobs.pending_len(), jobs.in_flight_len(),
                                   jobs.dead_letter_len())))
    return trace


async def topic_scenario(open_topic: Callable[..., TopicCell[Any]]) -> Trace:
    topic = open_topic(fresh("parity-t"))
    trace: Trace = [("publish before", await topic.publish("before"))]
    trace.append(("subscribe", str(await topic.subscribe("d"))))
    trace.append(("again", str(await topic.subscribe("d"))))
    await topic.subscribe("e", "ephemeral")
    trace.append(("publish", await topic.publish_many(["a", "b"])))
    trace.append(("advance", await topic.advance("d", timeout=10)))
    await _synced(topic)
    trace.append(("advance, timeout 0", await _outcome(topic.advance("d", timeout=0))))
    trace.append(("caught up, timeout 0", await _outcome(topic.advance("d", timeout=0))))
    trace.append(("advance unknown", await _outcome(topic.advance("nobody", timeout=10))))
    trace.append(("stream unknown", await _outcome(anext(topic.stream("nobody")))))
    trace.append(("poll", await topic.poll("e")))
    trace.append(("disconnect", await topic.disconnect("d")))
    trace.append(("offline poll", await topic.poll("d")))
    await topic.publish("c")
    trace.append(("reconnect", await topic.reconnect("d")))
    trace.append(("replay", await topic.advance("d", timeout=10)))
    trace.append(("ephemeral gone", (await topic.disconnect("e"),
                                     await topic.reconnect("e"))))
    trace.append(("unknown", (await topic.poll("nobody"), await topic.disconnect("nobody"))))
    trace.append(("bad id", await _outcome(topic.subscribe(5))))  # type: ignore[arg-type]
    await topic.subscribe("w", "ephemeral")
    waiting = asyncio.ensure_future(_outcome(topic.advance("w", timeout=10)))
    streaming = asyncio.ensure_future(_outcome(
        asyncio.wait_for(anext(aiter(topic.stream("w"))), 10)))
    await asyncio.sleep(0.1)  # both wait for an element
    await topic.disconnect("w")
    trace.append(("forgotten while waiting", (await waiting, await streaming)))
    return trace


SCENARIOS = {"queue": queue_scenario, "work_queue": work_scenario, "topic": topic_scenario}


@asynccontextmanager
async def _opener(kind: str, servers: dict[str, BrokerServer]) -> AsyncIterator[Any]:
    """Something with ``queue``, ``work_queue`` and ``topic`` for one backend."""
    if kind == "local":
        class Local:
            def queue(self, name: str, **options: Any) -> QueueCell[Any]:
                return QueueCell(name=name, **options)

            def work_queue(self, name: str, **options: Any) -> WorkQueueCell:
                return WorkQueueCell(name=name, clock=time.monotonic, **options)

            def topic(self, name: str) -> TopicCell[Any]:
                return TopicCell(name=name)

        yield Local()
    elif kind == "node":
        async with testing.cluster(1) as cluster:
            yield await cluster.leader()
    else:
        async with connect(servers[kind].url, poll_interval=0.2) as client:
            yield client


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
async def test_one_program_gives_one_trace_on_every_backend(
        scenario: str, nats_server: BrokerServer, redis_server: BrokerServer) -> None:
    run = SCENARIOS[scenario]
    servers = {"nats": nats_server, "redis": redis_server}
    traces: dict[str, Trace] = {}
    for kind in ("local", "node", "nats", "redis"):
        async with _opener(kind, servers) as backend:
            traces[kind] = await run(getattr(backend, scenario))
    for kind in ("node", "nats", "redis"):
        assert traces[kind] == traces["local"], kind
    expected = {  # what the reference itself must say, and so every backend
        "queue": [("pop closed", f"raised {QueueClosed.__name__}"),
                  ("pop empty, timeout 0", "raised TimeoutError"),
                  ("push, timeout 0", None), ("pop, timeout 0", "z"),
                  ("push full, timeout 0", "raised TimeoutError"),
                  ("offer, timeout 0", "None"), ("poll, timeout 0", "y"),
                  ("poll_messages, timeout 0", ["m"]), ("poll_many, timeout 0", ["n"]),
                  *((f"{name}, timeout 'soon'", "raised TypeError") for name in (
                      "offer", "poll", "poll_many", "poll_messages", "close")),
                  *((f"{name}, timeout nan", "raised ValueError") for name in (
                      "offer", "poll", "poll_many", "poll_messages", "close"))],
        "work_queue": [("claim empty, timeout 0", "raised TimeoutError"),
                       *(("other worker", worker, f"raised {SettlementRejected.__name__}")
                         for worker in ("w2", "", "lq.w1"))],
        "topic": [("advance, timeout 0", "b"), ("caught up, timeout 0", "raised TimeoutError"),
                  ("advance unknown", f"raised {UnknownSubscriber.__name__}"),
                  ("stream unknown", f"raised {UnknownSubscriber.__name__}"),
                  ("forgotten while waiting", (f"raised {UnknownSubscriber.__name__}",) * 2)],
    }
    for step in expected[scenario]:
        assert step in traces["local"], step


@pytest.mark.parametrize("kind", ["node", "nats", "redis"])
@pytest.mark.parametrize("first, second", [
    ({"capacity": 2}, {"limits": Limits(max_length=2)}),
    ({"limits": Limits(max_length=2)}, {"capacity": 2}),
    ({"capacity": 2}, {"capacity": 3}),
])
async def test_reopening_a_queue_with_other_bounds_is_refused_on_every_backend(
        kind: str, first: dict[str, Any], second: dict[str, Any],
        nats_server: BrokerServer, redis_server: BrokerServer) -> None:
    """A capacity and ``Limits(max_length=...)`` are other settings everywhere (a local
    cell has no names to reopen); the same bounds open the same cell."""
    servers = {"nats": nats_server, "redis": redis_server}
    async with _opener(kind, servers) as backend:
        name = fresh("parity-reopen")
        q = backend.queue(name, **first)
        await q.push("kept")
        with pytest.raises(InvalidConfiguration, match="already open with"):
            backend.queue(name, **second)
        assert backend.queue(name, **first) is q
