"""A call with an argument no backend can use raises the same typed error on a local
cell, on a member and on a client, before anything is proposed: nothing reaches the
log, and no member logs a failure while applying."""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from lazily_queue import (
    ClientAccess,
    ClientGrant,
    Credentials,
    InvalidConfiguration,
    InvalidTtl,
    Limits,
    QueueCell,
    SettlementRejected,
    TopicCell,
    UnsupportedValue,
    WorkQueueCell,
    connect,
    testing,
)

TOKEN = b"token-of-the-web-tier"
#: (what, the call on (queue, topic, work queue, a delivery id), the error it raises)
CALLS: list[tuple[str, Callable[[Any, Any, Any, int], Awaitable[Any]], type[Exception]]] = [
    ("a subscriber that is not a str", lambda q, t, w, d: t.disconnect(0), TypeError),
    ("a poll by a non-str subscriber", lambda q, t, w, d: t.poll(1), TypeError),
    ("a bool offset", lambda q, t, w, d: t.seek("s", True), ValueError),
    ("a worker that is not a str", lambda q, t, w, d: w.poll(1), TypeError),
    ("a delivery id that is not an int", lambda q, t, w, d: w.ack("x", "1"), TypeError),
    ("a count that is not an int", lambda q, t, w, d: q.pop_many(math.nan), ValueError),
    ("a give-back of no message", lambda q, t, w, d: q.give_back(["x"]), TypeError),
    ("a ttl too long to count", lambda q, t, w, d: t.publish("x", ttl=1e308), InvalidTtl),
    ("ids as one bytes value", lambda q, t, w, d: w.ack_many("x", bytes([d])), TypeError),
    ("released ids as bytes", lambda q, t, w, d: w.release("x", bytes([d])), TypeError),
    ("redriven ids as a str", lambda q, t, w, d: w.redrive("12"), TypeError),
]


async def _exercise(q: Any, t: Any, w: Any, proposals: Callable[[], int]) -> None:
    await q.push("a")
    await t.subscribe("s")
    await w.push("job")
    job = await w.claim("x")
    before = proposals()
    for what, call, error in CALLS:
        with pytest.raises(error):
            await call(q, t, w, job.delivery_id)
        assert proposals() == before, what
    # a delay too long to count waits as long as any can
    receipt = await w.nack("x", job.delivery_id, delay=1e308)
    assert receipt.outcome == "nacked" and w.delayed_len() == 1


async def test_a_local_cell_refuses_them() -> None:
    clock = time.monotonic
    await _exercise(QueueCell(), TopicCell(), WorkQueueCell(clock=clock), lambda: 0)


async def test_a_member_and_a_client_refuse_them_before_proposing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    grant = ClientGrant("web", TOKEN, produce=["*"], consume=["*"])
    options: testing.NodeOptions = {
        "clients": ClientAccess([grant], listen="memory://bad-arguments")}
    async with testing.cluster(1, node_options=lambda _id: options) as c:
        node = await c.leader()

        def proposals() -> int:
            return node.driver.replica.proposals

        await _exercise(node.queue("q"), node.topic("t"), node.work_queue("w"), proposals)
        async with connect("memory://bad-arguments", Credentials("web", TOKEN)) as client:
            await _exercise(client.queue("q2"), client.topic("t2"), client.work_queue("w2"),
                            proposals)
    assert not [r for r in caplog.records if "failed while applying" in r.getMessage()]


LONG = "x" * 100_000
HUGE = -(10 ** 5000)  # too long for repr() under Python's int-to-str limit
BIG = -HUGE


def _brief(exc: pytest.ExceptionInfo[BaseException], start: str) -> None:
    text = str(exc.value)
    assert text.startswith(start) and len(text) < 200, text[:300]


async def test_a_long_refused_value_is_quoted_briefly() -> None:
    with pytest.raises(TypeError) as exc:
        WorkQueueCell(clock=LONG)  # type: ignore[arg-type]
    _brief(exc, "clock must be a callable returning the time, got 'xxx")
    with pytest.raises(ValueError) as exc:
        QueueCell().items(prefetch=HUGE)
    _brief(exc, "prefetch must be an int >= 1, got an int of 16610 bits")
    topic: TopicCell[str] = TopicCell()
    await topic.subscribe("s")
    with pytest.raises(ValueError) as exc:
        await topic.seek("s", LONG)  # type: ignore[arg-type]
    _brief(exc, "offset must be an int, got 'xxx")
    async with testing.cluster(1) as c:
        node = await c.leader()
        with pytest.raises(ValueError) as exc:
            await node.topic("t").seek("s", LONG)  # type: ignore[arg-type]
        _brief(exc, "offset must be an int, got 'xxx")
        with pytest.raises(Exception) as exc:
            node.work_queue("w", retry=LONG)  # type: ignore[arg-type]
        _brief(exc, "retry must be a RetryPolicy, got 'xxx")


async def _odd_numbers(q: Any, t: Any, w: Any,
                       settle: Callable[[], Awaitable[None]] | None = None) -> None:
    """Numbers past a float's range, and text where a list belongs, on any backend
    (``settle``: what makes a client's reads show its writes)."""
    assert q.delayed() == []  # a client watches the queue from now on
    with pytest.raises(TimeoutError):  # a wait already over, not an OverflowError
        await q.pop(timeout=-BIG)
    await q.push("no limit", timeout=BIG)
    assert await q.pop(timeout=BIG) == "no limit"
    await q.push("later", delay=BIG)  # as long as any delay can be
    if settle is not None:
        await settle()
    assert len(q.delayed()) == 1 and q.len() == 0
    with pytest.raises(ValueError, match=r"must be at most \d+ seconds, got an int of 16610"):
        await q.push("x", ttl=BIG)
    with pytest.raises(ValueError, match=r"durability must be .durable. or .ephemeral., got "
                                         r"'xxx") as exc:
        await t.subscribe("s2", LONG)
    assert len(str(exc.value)) < 200
    with pytest.raises(TypeError, match=r"push_many takes an iterable of values, not one str"):
        await q.push_many("abc")
    with pytest.raises(TypeError, match=r"publish_many takes an iterable of values, not one"):
        await t.publish_many(b"abc")
    with pytest.raises(TypeError, match=r"push_many takes an iterable of values, not one str"):
        await w.push_many("abc")
    await w.push("job")
    job = await w.claim("x", timeout=BIG)
    with pytest.raises(Exception) as exc:
        await w.ack("x", BIG)
    # refused at the call (a client's member would refuse the whole frame it came in)
    assert isinstance(exc.value, SettlementRejected | UnsupportedValue), exc.value
    assert len(str(exc.value)) < 500
    await w.ack("x", job.delivery_id)
    await q.push_many(["a", "b"])
    assert await q.pop_many(2) == ["a", "b"]


async def test_odd_numbers_and_text_for_a_list_are_refused_on_every_backend() -> None:
    await _odd_numbers(QueueCell(), TopicCell(), WorkQueueCell(clock=time.monotonic))
    with pytest.raises(ValueError, match=r"now must be a finite time from 0 to 2\*\*53"):
        await WorkQueueCell().poll("x", now=BIG)
    with pytest.raises(ValueError, match=r"visibility_timeout must be a number > 0, got an int"):
        WorkQueueCell(visibility_timeout=BIG)
    grant = ClientGrant("web", TOKEN, produce=["*"], consume=["*"])
    options: testing.NodeOptions = {
        "clients": ClientAccess([grant], listen="memory://odd-numbers")}
    async with testing.cluster(1, node_options=lambda _id: options) as c:
        node = await c.leader()
        await _odd_numbers(node.queue("q"), node.topic("t"), node.work_queue("w"))
        month = node.work_queue("month", visibility_timeout=31 * 86400)  # held in ms here
        await month.push("long job")
        assert (await month.claim("x")).value == "long job"
        async with connect("memory://odd-numbers", Credentials("web", TOKEN)) as client:
            await _odd_numbers(client.queue("q2"), client.topic("t2"),
                               client.work_queue("w2"), client.barrier)


@pytest.mark.parametrize("lease", [math.nan, math.inf, "30", True, None])
async def test_a_bad_lease_is_refused_by_name_on_a_member_as_locally(lease: Any) -> None:
    if lease is not None:  # None is the default locally
        with pytest.raises(InvalidConfiguration, match="visibility_timeout must be"):
            WorkQueueCell(visibility_timeout=lease)
    async with testing.cluster(1) as c:
        node = await c.leader()
        with pytest.raises(InvalidConfiguration, match="visibility_timeout must be"):
            node.work_queue("w", visibility_timeout=lease)
        with pytest.raises(InvalidConfiguration, match=r"at least 0\.001 s"):
            node.work_queue("w", visibility_timeout=1e-9)
        assert (await node.work_queue("w").push("x")) == 0  # nothing was opened before


@pytest.mark.parametrize("limits", ["max_length=3", 3, {"max_length": 3}])
async def test_limits_that_are_not_a_limits_are_refused_where_the_cell_opens(
        limits: Any) -> None:
    with pytest.raises(InvalidConfiguration, match="limits must be a Limits"):
        QueueCell(limits=limits)
    with pytest.raises(InvalidConfiguration, match="limits must be a Limits"):
        WorkQueueCell(limits=limits)
    async with testing.cluster(1) as c:
        node = await c.leader()
        for open_cell in (node.queue, node.work_queue, node.topic):
            with pytest.raises(InvalidConfiguration, match="limits must be a Limits"):
                open_cell("c", limits=limits)
        jobs = node.work_queue("c", limits=Limits(max_length=3))  # the name is still free
        assert await jobs.push("x") == 0


@pytest.mark.parametrize("prefetch", ["5", math.nan, True, 1.5, 0])
def test_a_prefetch_that_is_no_positive_int_is_refused(prefetch: Any) -> None:
    with pytest.raises(ValueError, match="prefetch must be an int >= 1"):
        QueueCell().items(prefetch=prefetch)
    with pytest.raises(ValueError, match="prefetch must be an int >= 1"):
        WorkQueueCell().deliveries("w", prefetch=prefetch)


async def test_text_with_a_lone_surrogate_is_refused_by_name_before_it_is_proposed() -> None:
    from lazily_queue import InvalidHeaders, InvalidMessageId, InvalidName

    bad = "x\ud800"
    for queue in (QueueCell(), None):
        async with testing.cluster(1) as c:
            node = await c.leader()
            q = queue if queue is not None else node.queue("q")
            with pytest.raises(InvalidHeaders, match="not valid Unicode text"):
                await q.push(1, headers={"k": bad})
            with pytest.raises(InvalidMessageId, match="not valid Unicode text"):
                await q.push(1, msg_id=bad)
            assert q.len() == 0
    async with testing.cluster(1) as c:
        node = await c.leader()
        with pytest.raises(InvalidName, match=r"queue name .* not valid Unicode text"):
            node.queue(bad)
        work = node.work_queue("w")
        await work.push(1)
        with pytest.raises(InvalidName, match=r"worker name .* not valid Unicode text"):
            await work.claim(bad)
        with pytest.raises(InvalidName, match=r"subscriber name .* not valid Unicode text"):
            await node.topic("t").subscribe(bad)
        assert work.pending_len() == 1


async def test_a_bad_count_to_claim_many_is_refused_at_once_on_an_empty_queue() -> None:
    import asyncio

    with pytest.raises(ValueError, match="n must be an int >= 1"):
        await asyncio.wait_for(WorkQueueCell().claim_many("w", -5), 2)
    async with testing.cluster(1) as c:
        node = await c.leader()
        with pytest.raises(ValueError, match="n must be an int >= 1"):
            await asyncio.wait_for(node.work_queue("w").claim_many("w", 0), 2)


async def test_a_worker_name_over_the_rule_is_refused_at_once_on_an_empty_queue() -> None:
    import asyncio

    from lazily_queue import InvalidName

    async def first(jobs: WorkQueueCell) -> Any:
        async for job in jobs.deliveries(LONG):
            return job
        return None

    grant = ClientGrant("web", TOKEN, produce=["*"], consume=["*"])
    options: testing.NodeOptions = {
        "clients": ClientAccess([grant], listen="memory://empty-claims")}
    async with testing.cluster(1, node_options=lambda _id: options) as c:
        node = await c.leader()
        async with connect("memory://empty-claims", Credentials("web", TOKEN)) as client:
            for jobs in (node.work_queue("w"), client.work_queue("w2")):
                for claiming in (jobs.claim(LONG), jobs.claim_many(LONG, 2), first(jobs)):
                    with pytest.raises(InvalidName, match="worker name"):
                        await asyncio.wait_for(claiming, 5)


async def test_a_worker_that_is_not_a_str_is_refused_at_once_on_an_empty_queue() -> None:
    import asyncio

    with pytest.raises(TypeError, match="worker must be a str"):
        await asyncio.wait_for(WorkQueueCell(clock=time.monotonic).claim(5), 2)  # type: ignore[arg-type]
    async with testing.cluster(1) as c:
        jobs = (await c.leader()).work_queue("w")
        for claiming in (jobs.claim(None), jobs.claim_many(5, 2)):  # type: ignore[arg-type]
            with pytest.raises(TypeError, match="worker must be a str"):
                await asyncio.wait_for(claiming, 2)


async def test_a_node_names_its_longest_lease_for_a_visibility_timeout_past_it() -> None:
    async with testing.cluster(1) as c:
        node = await c.leader()
        with pytest.raises(InvalidConfiguration, match=r"at most 1e\+297 s on a node.*1e\+300"):
            node.work_queue("w", visibility_timeout=1e300)
        assert node.work_queue("w", visibility_timeout=1e297).visibility_timeout == 1e300


@pytest.mark.parametrize("cell", [QueueCell, WorkQueueCell, TopicCell])
def test_a_name_given_where_the_storage_goes_says_to_pass_it_as_name(cell: Any) -> None:
    with pytest.raises(TypeError, match=r"first argument is its storage, not its name: pass "
                                        r"the name as name='orders'"):
        cell("orders")
