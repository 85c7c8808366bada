"""TopicCell shell: per-subscriber readers, exact atomic invalidation, async twins, stream."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from topic_work_models import TopicModel

from lazily_queue import (
    SubscribeOutcome,
    TopicCell,
    TopicCore,
    TopicTransition,
    UnsupportedOperation,
)
from lazily_queue.reactive import Context, Effect
from lazily_queue.storage import ReplicatedTopicStorage, TopicStorage


class Counter:
    """An effect over some readers that records what it saw on every run."""

    def __init__(self, ctx: Context, *readers: Any) -> None:
        self.seen: list[tuple[Any, ...]] = []
        self.effect = Effect(lambda: self.seen.append(tuple(r.get() for r in readers)),
                             context=ctx)

    @property
    def runs(self) -> int:
        return self.effect.runs


@pytest.fixture
def ctx() -> Context:
    return Context(name="topic-test")


def test_local_storage_is_the_core(ctx: Context) -> None:
    topic: TopicCell[str] = TopicCell(context=ctx)
    assert isinstance(topic.storage, TopicCore)
    assert isinstance(topic.storage, TopicStorage)
    assert not isinstance(topic.storage, ReplicatedTopicStorage)
    with pytest.raises(TypeError, match="not a topic storage"):
        TopicCell(object(), context=ctx)  # type: ignore[arg-type]


def test_reader_is_cached_and_unavailable_is_distinct_from_empty(ctx: Context) -> None:
    topic: TopicCell[str] = TopicCell(context=ctx)
    reader = topic.reader("s")
    assert topic.reader("s") is reader
    probe = Counter(ctx, reader)
    assert probe.seen == [(None,)]
    assert topic.subscribe("s") is SubscribeOutcome.Subscribed
    assert probe.seen == [(None,), ([],)]
    assert topic.disconnect("s") is True
    assert probe.seen == [(None,), ([],), (None,)]
    with pytest.raises(TypeError, match="subscriber id must be a str"):
        topic.reader(3)  # type: ignore[arg-type]


def test_publish_is_one_atomic_wave_over_connected_readers(ctx: Context) -> None:
    topic: TopicCell[str] = TopicCell(context=ctx)
    for sub in ("a", "b"):
        topic.subscribe(sub)
    topic.subscribe("off")
    topic.disconnect("off")
    both = Counter(ctx, topic.reader("a"), topic.reader("b"))
    off = Counter(ctx, topic.reader("off"))
    topic.publish("x")
    assert both.runs == 2 and both.seen[-1] == (["x"], ["x"])  # one rerun, never torn
    assert off.runs == 1


def test_advance_changes_only_the_advanced(ctx: Context) -> None:
    topic: TopicCell[str] = TopicCell(context=ctx)
    topic.subscribe("a")
    topic.subscribe("b")
    topic.publish("x")
    a, b = Counter(ctx, topic.reader("a")), Counter(ctx, topic.reader("b"))
    assert topic.advance("a") == "x"
    assert (a.runs, b.runs) == (2, 1)
    assert topic.advance("a") is None
    assert topic.advance("ghost") is None
    assert (a.runs, b.runs) == (2, 1)


def test_gc_invalidates_only_clamped_ephemeral_readers(ctx: Context) -> None:
    topic: TopicCell[str] = TopicCell.from_snapshot({
        "base_offset": 0, "elements": ["a", "b", "c"],
        "subscriptions": {"d": {"durability": "durable", "connected": True, "cursor": 2},
                          "e": {"durability": "ephemeral", "connected": True, "cursor": 0},
                          "f": {"durability": "ephemeral", "connected": True, "cursor": 3}},
    }, context=ctx)
    d, e, f = (Counter(ctx, topic.reader(s)) for s in "def")
    assert topic.gc() == 2
    assert (d.runs, e.runs, f.runs) == (1, 2, 1)
    assert e.seen[-1] == (["c"],)
    assert topic.gc() == 0
    assert (d.runs, e.runs, f.runs) == (1, 2, 1)


def test_batch_coalesces_a_burst_of_publishes(ctx: Context) -> None:
    topic: TopicCell[int] = TopicCell(context=ctx)
    topic.subscribe("s")
    probe = Counter(ctx, topic.reader("s"))
    with ctx.batch():
        for i in range(5):
            topic.publish(i)
        assert topic.read_stream("s") == [0, 1, 2, 3, 4]  # applied synchronously
        assert probe.runs == 1
    assert probe.runs == 2 and probe.seen[-1] == ([0, 1, 2, 3, 4],)


def test_unobserved_readers_are_demand_driven(ctx: Context) -> None:
    topic: TopicCell[int] = TopicCell(context=ctx)
    reader = topic.reader("s")
    assert reader.get() is None
    topic.subscribe("s")
    for i in range(3):
        topic.publish(i)
    assert reader.is_stale
    assert reader.get() == [0, 1, 2]
    topic.advance("s")
    assert reader.get() == [1, 2]


def test_views_and_snapshot(ctx: Context) -> None:
    topic: TopicCell[str] = TopicCell(context=ctx, name="t")
    topic.subscribe("s", "ephemeral")
    assert topic.publish("a") == 0
    assert topic.publish("b") == 1
    assert topic.read("s") == "a"
    assert (topic.base_offset(), topic.end_offset(), topic.elements()) == (0, 2, ["a", "b"])
    assert topic.subscriptions() == {"s": {"durability": "ephemeral", "connected": True,
                                           "cursor": 0}}
    again: TopicCell[str] = TopicCell.from_snapshot(topic.snapshot(), context=ctx)
    assert again.snapshot() == topic.snapshot()
    assert "t" in repr(topic)


# -- async twins and stream -----------------------------------------------------------


async def test_async_twins_on_local_storage(ctx: Context) -> None:
    topic: TopicCell[str] = TopicCell(context=ctx)
    assert await topic.asubscribe("s") is SubscribeOutcome.Subscribed
    assert await topic.apublish("a") == 0
    assert await topic.aadvance("s") == "a"
    assert await topic.adisconnect("s") is True
    assert await topic.areconnect("s") is True
    assert await topic.agc() == 1


async def test_stream_waits_yields_and_advances(ctx: Context) -> None:
    topic: TopicCell[int] = TopicCell(context=ctx)
    topic.subscribe("s")
    got: list[int] = []

    async def consume() -> None:
        async for value in topic.stream("s"):
            got.append(value)
            if len(got) == 3:
                break

    task = asyncio.create_task(consume())
    await asyncio.sleep(0)
    for i in range(4):
        topic.publish(i)
        await asyncio.sleep(0)
    await asyncio.wait_for(task, 2)
    assert got == [0, 1, 2]
    assert topic.read_stream("s") == [3]  # exactly the yielded elements were consumed


async def test_stream_waits_for_subscribe_and_reconnect(ctx: Context) -> None:
    topic: TopicCell[str] = TopicCell(context=ctx)
    stream = topic.stream("late")
    pending = asyncio.ensure_future(anext(stream))
    await asyncio.sleep(0)
    topic.publish("missed")
    topic.subscribe("late")
    await asyncio.sleep(0)
    assert not pending.done()
    topic.publish("seen")
    assert await asyncio.wait_for(pending, 2) == "seen"
    await stream.aclose()


async def test_cancelled_stream_never_skips_an_element(ctx: Context) -> None:
    topic: TopicCell[str] = TopicCell(context=ctx)
    topic.subscribe("s")
    stream = topic.stream("s")
    waiting = asyncio.ensure_future(anext(stream))
    await asyncio.sleep(0)
    waiting.cancel()
    topic.publish("a")  # published in the same tick as the cancellation
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert topic.read_stream("s") == ["a"]
    async with asyncio.timeout(2):
        async for value in topic.stream("s"):
            assert value == "a"
            break
    assert topic.read_stream("s") == []


async def test_stream_with_timeout(ctx: Context) -> None:
    topic: TopicCell[str] = TopicCell(context=ctx)
    topic.subscribe("s")
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.05):
            async for _ in topic.stream("s"):
                pass
    assert topic.subscriptions()["s"]["cursor"] == 0


async def test_competing_streams_on_one_subscriber_never_duplicate(ctx: Context) -> None:
    topic: TopicCell[int] = TopicCell(context=ctx)
    topic.subscribe("s")
    got: list[int] = []

    async def consume() -> None:
        async for value in topic.stream("s"):
            got.append(value)

    tasks = [asyncio.create_task(consume()) for _ in range(3)]
    await asyncio.sleep(0)
    for i in range(20):
        topic.publish(i)
        if i % 3 == 0:
            await asyncio.sleep(0)
    for _ in range(10):
        await asyncio.sleep(0)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    assert sorted(got) == list(range(20)) and len(got) == 20


# -- replicated and observable storage ------------------------------------------------


class ObservedTopic(TopicCore[Any]):
    """A local core that reports every transition, as a replica applying entries would."""

    def __init__(self) -> None:
        super().__init__()
        self.listener: Any = None

    def set_change_listener(self, listener: Any) -> None:
        self.listener = listener

    def _report(self, step: TopicTransition[Any]) -> TopicTransition[Any]:
        if step.invalidated and self.listener is not None:
            self.listener(step.invalidated)
        return step

    def publish(self, value: Any) -> TopicTransition[int]:
        return self._report(super().publish(value))

    def subscribe(self, subscriber: str, durability: Any = "durable") -> Any:
        return self._report(super().subscribe(subscriber, durability))

    def advance(self, subscriber: str) -> Any:
        return self._report(super().advance(subscriber))

    def disconnect(self, subscriber: str) -> Any:
        return self._report(super().disconnect(subscriber))

    def reconnect(self, subscriber: str) -> Any:
        return self._report(super().reconnect(subscriber))

    def gc(self) -> Any:
        return self._report(super().gc())


class ReplicatedTopic:
    """A fake replicated backend: async ops 'commit' after a loop turn, then report."""

    def __init__(self) -> None:
        self.replica = ObservedTopic()
        self.commits = 0

    def set_change_listener(self, listener: Any) -> None:
        self.replica.set_change_listener(listener)

    async def _commit(self, op: str, *args: Any) -> Any:
        await asyncio.sleep(0)
        self.commits += 1
        return getattr(self.replica, op)(*args)

    async def subscribe_async(self, subscriber: str, durability: Any = "durable", *,
                              timeout: float | None = None) -> Any:
        return await self._commit("subscribe", subscriber, durability)

    async def reconnect_async(self, subscriber: str, *, timeout: float | None = None) -> Any:
        return await self._commit("reconnect", subscriber)

    async def disconnect_async(self, subscriber: str, *, timeout: float | None = None) -> Any:
        return await self._commit("disconnect", subscriber)

    async def publish_async(self, value: Any, *, timeout: float | None = None) -> Any:
        return await self._commit("publish", value)

    async def advance_async(self, subscriber: str, *, timeout: float | None = None) -> Any:
        return await self._commit("advance", subscriber)

    async def gc_async(self, *, timeout: float | None = None) -> Any:
        return await self._commit("gc")

    # Reads go to the local replica.
    read = property(lambda self: self.replica.read)
    read_stream = property(lambda self: self.replica.read_stream)
    base_offset = property(lambda self: self.replica.base_offset)
    end_offset = property(lambda self: self.replica.end_offset)
    elements = property(lambda self: self.replica.elements)
    subscriptions = property(lambda self: self.replica.subscriptions)
    snapshot = property(lambda self: self.replica.snapshot)


def test_observable_storage_invalidates_from_reports_only(ctx: Context) -> None:
    storage = ObservedTopic()
    topic: TopicCell[str] = TopicCell(storage, context=ctx)
    topic.subscribe("s")
    probe = Counter(ctx, topic.reader("s"))
    topic.publish("a")
    assert probe.runs == 2  # reported once, not also invalidated by the shell
    storage.publish("b")  # a transition the shell did not make
    assert probe.runs == 3 and probe.seen[-1] == (["a", "b"],)


async def test_replicated_storage_requires_async_twins(ctx: Context) -> None:
    storage = ReplicatedTopic()
    assert isinstance(storage, ReplicatedTopicStorage)
    topic: TopicCell[str] = TopicCell(storage, context=ctx)  # type: ignore[arg-type]
    for call, twin in ((lambda: topic.publish("a"), "apublish"),
                       (lambda: topic.subscribe("s"), "asubscribe"),
                       (lambda: topic.advance("s"), "aadvance"),
                       (lambda: topic.gc(), "agc")):
        with pytest.raises(UnsupportedOperation, match=f"await {twin}"):
            call()
    probe = Counter(ctx, topic.reader("s"))
    assert await topic.asubscribe("s") is SubscribeOutcome.Subscribed
    assert await topic.apublish("a") == 0
    assert probe.runs == 3
    assert topic.read_stream("s") == ["a"]  # reads work on the local replica
    assert await topic.aadvance("s") == "a"
    assert await topic.adisconnect("s") is True
    assert await topic.areconnect("s") is True
    assert await topic.agc() == 1
    assert probe.runs == 6 and storage.commits == 6


async def test_replicated_stream_is_at_least_once(ctx: Context) -> None:
    storage = ReplicatedTopic()
    topic: TopicCell[str] = TopicCell(storage, context=ctx)  # type: ignore[arg-type]
    await topic.asubscribe("s")
    for v in "abc":
        await topic.apublish(v)
    stream = topic.stream("s")
    assert await anext(stream) == "a"
    assert await anext(stream) == "b"  # "a" advanced when the next one was requested
    await stream.aclose()  # interrupted while holding "b": it is delivered again
    assert topic.read_stream("s") == ["b", "c"]
    async with asyncio.timeout(2):
        again = [v async for v in _take(topic.stream("s"), 2)]
    assert again == ["b", "c"]


async def _take(stream: Any, n: int) -> Any:
    async for value in stream:
        yield value
        n -= 1
        if n == 0:
            return


# -- the shell's invalidations follow the model ----------------------------------------

IDS = ["a", "b", "c"]
OPS = st.one_of(
    st.tuples(st.just("subscribe"), st.sampled_from(IDS),
              st.sampled_from(["durable", "ephemeral"])),
    st.tuples(st.sampled_from(["reconnect", "disconnect", "advance"]), st.sampled_from(IDS)),
    st.tuples(st.just("publish"), st.integers(0, 9)),
    st.tuples(st.just("gc")),
)


@settings(max_examples=100, deadline=None)
@given(st.lists(OPS, max_size=30), st.booleans())
def test_readers_rerun_exactly_when_the_model_invalidates(
    ops: list[tuple[Any, ...]], observed: bool
) -> None:
    ctx = Context()
    topic: TopicCell[int] = TopicCell(ObservedTopic() if observed else None, context=ctx)
    model = TopicModel()
    probes = {s: Counter(ctx, topic.reader(s)) for s in IDS}
    for op in ops:
        runs = {s: p.runs for s, p in probes.items()}
        getattr(topic, op[0])(*op[1:])
        _, invalidated = getattr(model, op[0])(*op[1:])
        rerun = {s for s, p in probes.items() if p.runs != runs[s]}
        assert rerun == invalidated, op
        for s, p in probes.items():
            assert p.runs - runs[s] <= 1  # one wave per op
            assert p.seen[-1] == (model.reads().get(s),)
