"""TopicCell shell: per-subscriber readers, exact atomic invalidation, the awaitable
surface, stream, and the storage seam's declared capabilities."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from topic_work_models import TopicModel

from lazily_queue import (
    SubscribeOutcome,
    TopicCell,
    TopicTransition,
    UnknownSubscriber,
    UnsupportedOperation,
)
from lazily_queue.reactive import Context, Effect
from lazily_queue.storage import LocalTopicStorage, StorageCapabilities


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


def test_local_storage_is_the_core_and_declares_sync(ctx: Context) -> None:
    topic: TopicCell[str] = TopicCell(context=ctx)
    assert isinstance(topic.storage, LocalTopicStorage)
    assert topic.capabilities == StorageCapabilities(sync=True, dedup=True, messages=True,
                                                    replay=True, replay_time=True, headers=True,
                                                    groups=True, subscriber_delete=True)
    with pytest.raises(TypeError, match="not a topic storage: it has no `capabilities`"):
        TopicCell(object(), context=ctx)  # type: ignore[arg-type]


def test_a_declared_capability_needs_its_methods(ctx: Context) -> None:
    class Boasting(ReplicatedTopic):
        capabilities = StorageCapabilities(sync=True, observable=True)

    with pytest.raises(TypeError, match="declares the 'sync' capability but has no try_"):
        TopicCell(Boasting(), context=ctx)

    class Partial(ReplicatedTopic):
        gc = None  # type: ignore[assignment]

    with pytest.raises(TypeError, match=r"Partial is not a topic storage: it has no gc\(\)"):
        TopicCell(Partial(), context=ctx)


def test_reader_is_cached_and_unavailable_is_distinct_from_empty(ctx: Context) -> None:
    topic: TopicCell[str] = TopicCell(context=ctx)
    reader = topic.reader("s")
    assert topic.reader("s") is reader
    probe = Counter(ctx, reader)
    assert probe.seen == [(None,)]
    assert topic.try_subscribe("s") is SubscribeOutcome.Subscribed
    assert probe.seen == [(None,), ([],)]
    assert topic.try_disconnect("s") is True
    assert probe.seen == [(None,), ([],), (None,)]
    with pytest.raises(TypeError, match="subscriber id must be a str"):
        topic.reader(3)  # type: ignore[arg-type]


def test_publish_is_one_atomic_wave_over_connected_readers(ctx: Context) -> None:
    topic: TopicCell[str] = TopicCell(context=ctx)
    for sub in ("a", "b"):
        topic.try_subscribe(sub)
    topic.try_subscribe("off")
    topic.try_disconnect("off")
    both = Counter(ctx, topic.reader("a"), topic.reader("b"))
    off = Counter(ctx, topic.reader("off"))
    topic.try_publish("x")
    assert both.runs == 2 and both.seen[-1] == (["x"], ["x"])  # one rerun, never torn
    assert off.runs == 1


def test_advance_changes_only_the_advanced(ctx: Context) -> None:
    topic: TopicCell[str] = TopicCell(context=ctx)
    topic.try_subscribe("a")
    topic.try_subscribe("b")
    topic.try_publish("x")
    a, b = Counter(ctx, topic.reader("a")), Counter(ctx, topic.reader("b"))
    assert topic.try_advance("a") == "x"
    assert (a.runs, b.runs) == (2, 1)
    assert topic.try_advance("a") is None
    assert topic.try_advance("ghost") is None
    assert (a.runs, b.runs) == (2, 1)


def test_gc_invalidates_only_clamped_ephemeral_readers(ctx: Context) -> None:
    topic: TopicCell[str] = TopicCell.from_snapshot({
        "base_offset": 0, "elements": ["a", "b", "c"],
        "subscriptions": {"d": {"durability": "durable", "connected": True, "cursor": 2},
                          "e": {"durability": "ephemeral", "connected": True, "cursor": 0},
                          "f": {"durability": "ephemeral", "connected": True, "cursor": 3}},
    }, context=ctx)
    d, e, f = (Counter(ctx, topic.reader(s)) for s in "def")
    assert topic.try_gc() == 2
    assert (d.runs, e.runs, f.runs) == (1, 2, 1)
    assert e.seen[-1] == (["c"],)
    assert topic.try_gc() == 0
    assert (d.runs, e.runs, f.runs) == (1, 2, 1)


def test_batch_coalesces_a_burst_of_publishes(ctx: Context) -> None:
    topic: TopicCell[int] = TopicCell(context=ctx)
    topic.try_subscribe("s")
    probe = Counter(ctx, topic.reader("s"))
    with ctx.batch():
        for i in range(5):
            topic.try_publish(i)
        assert topic.read_stream("s") == [0, 1, 2, 3, 4]  # applied synchronously
        assert probe.runs == 1
    assert probe.runs == 2 and probe.seen[-1] == ([0, 1, 2, 3, 4],)


def test_unobserved_readers_are_demand_driven(ctx: Context) -> None:
    topic: TopicCell[int] = TopicCell(context=ctx)
    reader = topic.reader("s")
    assert reader.get() is None
    topic.try_subscribe("s")
    for i in range(3):
        topic.try_publish(i)
    assert reader.is_stale
    assert reader.get() == [0, 1, 2]
    topic.try_advance("s")
    assert reader.get() == [1, 2]


def test_views_and_snapshot(ctx: Context) -> None:
    topic: TopicCell[str] = TopicCell(context=ctx, name="t")
    topic.try_subscribe("s", "ephemeral")
    assert topic.try_publish("a") == 0
    assert topic.try_publish("b") == 1
    assert topic.read("s") == "a"
    assert (topic.base_offset(), topic.end_offset(), topic.elements()) == (0, 2, ["a", "b"])
    assert topic.subscriptions() == {"s": {"durability": "ephemeral", "connected": True,
                                           "cursor": 0}}
    again: TopicCell[str] = TopicCell.from_snapshot(topic.snapshot(), context=ctx)
    assert again.snapshot() == topic.snapshot()
    assert "t" in repr(topic)


# -- the awaitable surface and stream ---------------------------------------------------


async def test_awaitables_on_local_storage(ctx: Context) -> None:
    topic: TopicCell[str] = TopicCell(context=ctx)
    assert await topic.subscribe("s") is SubscribeOutcome.Subscribed
    assert await topic.publish("a") == 0
    assert await topic.poll("s") == "a"
    assert await topic.poll("s") is None  # poll does not wait
    assert await topic.disconnect("s") is True
    assert await topic.reconnect("s") is True
    assert await topic.gc() == 1


async def test_advance_waits_for_an_element_and_consumes_it(ctx: Context) -> None:
    topic: TopicCell[str | None] = TopicCell(context=ctx)
    await topic.subscribe("s")
    waiter = asyncio.create_task(topic.advance("s"))
    await asyncio.sleep(0)
    assert not waiter.done()  # subscribed, but nothing to read yet
    await topic.publish(None)  # a None element is an element
    assert await asyncio.wait_for(waiter, 2) is None
    assert topic.read_stream("s") == []
    await topic.publish("b")
    assert await topic.advance("s") == "b"
    with pytest.raises(TimeoutError):
        await topic.advance("s", timeout=0.02)


async def test_cancelled_advance_consumes_nothing(ctx: Context) -> None:
    topic: TopicCell[str] = TopicCell(context=ctx)
    topic.try_subscribe("s")
    waiter = asyncio.create_task(topic.advance("s"))
    await asyncio.sleep(0)
    waiter.cancel()
    topic.try_publish("a")  # lands in the same tick as the cancellation
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert topic.read_stream("s") == ["a"]


async def test_stream_waits_yields_and_advances(ctx: Context) -> None:
    topic: TopicCell[int] = TopicCell(context=ctx)
    topic.try_subscribe("s")
    got: list[int] = []

    async def consume() -> None:
        async for value in topic.stream("s"):
            got.append(value)
            if len(got) == 3:
                break

    task = asyncio.create_task(consume())
    await asyncio.sleep(0)
    for i in range(4):
        topic.try_publish(i)
        await asyncio.sleep(0)
    await asyncio.wait_for(task, 2)
    assert got == [0, 1, 2]
    assert topic.read_stream("s") == [3]  # exactly the yielded elements were consumed


async def test_advance_and_stream_refuse_an_unknown_subscriber_at_once(ctx: Context) -> None:
    topic: TopicCell[str] = TopicCell(context=ctx)
    topic.try_publish("missed")
    with pytest.raises(UnknownSubscriber, match=r"'late' is not subscribed.*subscribe it first"):
        await topic.advance("late")  # no timeout: it would have waited for ever
    with pytest.raises(UnknownSubscriber, match="'late'"):
        await anext(topic.stream("late"))
    assert topic.subscriptions() == {} and topic.end_offset() == 1  # nothing changed


@pytest.mark.parametrize("drop", ["delete", "ephemeral disconnect"])
async def test_advance_and_stream_end_when_their_subscriber_is_dropped(
    ctx: Context, drop: str,
) -> None:
    """An id dropped while a call waits for it raises, as an unknown one does at once:
    nothing would ever arrive for it."""
    topic: TopicCell[str] = TopicCell(context=ctx)
    ephemeral = drop == "ephemeral disconnect"
    await topic.subscribe("s", "ephemeral" if ephemeral else "durable")
    advancing = asyncio.ensure_future(topic.advance("s"))
    stream = topic.stream("s")
    streaming = asyncio.ensure_future(anext(stream))
    await asyncio.sleep(0)
    assert not advancing.done() and not streaming.done()  # caught up: they wait
    if ephemeral:
        await topic.disconnect("s")
    else:
        await topic.delete_subscriber("s")
    for waiter in (advancing, streaming):
        with pytest.raises(UnknownSubscriber, match="'s' was dropped while this call waited"):
            await asyncio.wait_for(waiter, 2)
    await stream.aclose()


async def test_stream_waits_for_reconnect(ctx: Context) -> None:
    topic: TopicCell[str] = TopicCell(context=ctx)
    topic.try_subscribe("late")
    topic.try_disconnect("late")
    stream = topic.stream("late")
    pending = asyncio.ensure_future(anext(stream))
    await asyncio.sleep(0)
    assert not pending.done()  # offline: waits
    topic.try_reconnect("late")
    topic.try_publish("seen")
    assert await asyncio.wait_for(pending, 2) == "seen"
    await stream.aclose()


async def test_cancelled_stream_never_skips_an_element(ctx: Context) -> None:
    topic: TopicCell[str] = TopicCell(context=ctx)
    topic.try_subscribe("s")
    stream = topic.stream("s")
    waiting = asyncio.ensure_future(anext(stream))
    await asyncio.sleep(0)
    waiting.cancel()
    topic.try_publish("a")  # published in the same tick as the cancellation
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
    topic.try_subscribe("s")
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.05):
            async for _ in topic.stream("s"):
                pass
    assert topic.subscriptions()["s"]["cursor"] == 0


async def test_competing_streams_on_one_subscriber_never_duplicate(ctx: Context) -> None:
    topic: TopicCell[int] = TopicCell(context=ctx)
    topic.try_subscribe("s")
    got: list[int] = []

    async def consume() -> None:
        async for value in topic.stream("s"):
            got.append(value)

    tasks = [asyncio.create_task(consume()) for _ in range(3)]
    await asyncio.sleep(0)
    for i in range(20):
        topic.try_publish(i)
        if i % 3 == 0:
            await asyncio.sleep(0)
    for _ in range(10):
        await asyncio.sleep(0)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    assert sorted(got) == list(range(20)) and len(got) == 20


# -- replicated and observable storage ------------------------------------------------


class ObservedTopic(LocalTopicStorage[Any]):
    """A local core that reports every transition, as a replica applying entries would."""

    capabilities = StorageCapabilities(sync=True, observable=True)

    def __init__(self) -> None:
        super().__init__()
        self.listener: Any = None

    def set_change_listener(self, listener: Any) -> None:
        self.listener = listener

    def _report(self, step: TopicTransition[Any]) -> TopicTransition[Any]:
        if step.invalidated and self.listener is not None:
            self.listener(step.invalidated)
        return step

    def try_publish(self, value: Any) -> TopicTransition[int]:
        return self._report(super().try_publish(value))

    def try_subscribe(self, subscriber: str, durability: Any = "durable") -> Any:
        return self._report(super().try_subscribe(subscriber, durability))

    def try_advance(self, subscriber: str) -> Any:
        return self._report(super().try_advance(subscriber))

    def try_disconnect(self, subscriber: str) -> Any:
        return self._report(super().try_disconnect(subscriber))

    def try_reconnect(self, subscriber: str) -> Any:
        return self._report(super().try_reconnect(subscriber))

    def try_gc(self) -> Any:
        return self._report(super().try_gc())


class ReplicatedTopic:
    """A fake replicated backend (observable, no ``sync``): async ops 'commit' after a
    loop turn, then report."""

    capabilities = StorageCapabilities(observable=True)

    def __init__(self) -> None:
        self.replica = ObservedTopic()
        self.commits = 0

    def set_change_listener(self, listener: Any) -> None:
        self.replica.set_change_listener(listener)

    async def _commit(self, op: str, *args: Any) -> Any:
        await asyncio.sleep(0)
        self.commits += 1
        return getattr(self.replica, op)(*args)

    async def subscribe(self, subscriber: str, durability: Any = "durable", *,
                        timeout: float | None = None) -> Any:
        return await self._commit("try_subscribe", subscriber, durability)

    async def reconnect(self, subscriber: str, *, timeout: float | None = None) -> Any:
        return await self._commit("try_reconnect", subscriber)

    async def disconnect(self, subscriber: str, *, timeout: float | None = None) -> Any:
        return await self._commit("try_disconnect", subscriber)

    async def publish(self, value: Any, *, timeout: float | None = None) -> Any:
        return await self._commit("try_publish", value)

    async def poll(self, subscriber: str, *, timeout: float | None = None) -> Any:
        return await self._commit("try_advance", subscriber)

    async def gc(self, *, timeout: float | None = None) -> Any:
        return await self._commit("try_gc")

    async def advance_to(self, subscriber: str, offset: int, *,
                         timeout: float | None = None) -> Any:
        await asyncio.sleep(0)
        self.commits += 1
        return self.replica._report(self.replica.core.advance_to(subscriber, offset))

    # Reads go to the local replica.
    cursor = property(lambda self: self.replica.cursor)
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
    topic.try_subscribe("s")
    probe = Counter(ctx, topic.reader("s"))
    topic.try_publish("a")
    assert probe.runs == 2  # reported once, not also invalidated by the shell
    storage.try_publish("b")  # a transition the shell did not make
    assert probe.runs == 3 and probe.seen[-1] == (["a", "b"],)


async def test_a_backend_without_sync_refuses_try_and_serves_the_awaitables(
    ctx: Context,
) -> None:
    storage = ReplicatedTopic()
    topic: TopicCell[str] = TopicCell(storage, context=ctx)
    assert topic.capabilities == StorageCapabilities(observable=True)
    for call, awaitable in ((lambda: topic.try_publish("a"), "publish(value)"),
                            (lambda: topic.try_subscribe("s"), "subscribe(subscriber)"),
                            (lambda: topic.try_reconnect("s"), "reconnect(subscriber)"),
                            (lambda: topic.try_disconnect("s"), "disconnect(subscriber)"),
                            (lambda: topic.try_advance("s"), "poll(subscriber)"),
                            (lambda: topic.try_gc(), "gc()")):
        with pytest.raises(UnsupportedOperation, match=re.escape(f"await topic.{awaitable}")):
            call()
    probe = Counter(ctx, topic.reader("s"))
    assert await topic.subscribe("s") is SubscribeOutcome.Subscribed
    assert await topic.publish("a") == 0
    assert probe.runs == 3
    assert topic.read_stream("s") == ["a"]  # reads work on the local replica
    assert await topic.poll("s") == "a"
    assert await topic.disconnect("s") is True
    assert await topic.reconnect("s") is True
    assert await topic.gc() == 1
    assert probe.runs == 6 and storage.commits == 6
    waiter = asyncio.create_task(topic.advance("s"))
    await asyncio.sleep(0)
    await topic.publish("b")
    assert await asyncio.wait_for(waiter, 2) == "b"
    assert storage.commits == 8


async def test_replicated_stream_is_at_least_once(ctx: Context) -> None:
    storage = ReplicatedTopic()
    topic: TopicCell[str] = TopicCell(storage, context=ctx)
    await topic.subscribe("s")
    for v in "abcd":
        await topic.publish(v)
    published = storage.commits
    stream = topic.stream("s", batch=3)
    assert [await anext(stream) for _ in range(3)] == ["a", "b", "c"]
    assert storage.commits == published  # a batch is read locally, not committed per element
    assert await anext(stream) == "d"  # asking past the batch commits its cursor move
    assert storage.commits == published + 1
    await stream.aclose()  # interrupted while holding "d": it is delivered again
    assert topic.read_stream("s") == ["d"]
    async with asyncio.timeout(2):
        again = [v async for v in _take(topic.stream("s"), 1)]
    assert again == ["d"]


async def test_a_replicated_stream_behind_reads_batches_without_copying_its_backlog(
    ctx: Context,
) -> None:
    storage = ReplicatedTopic()
    topic: TopicCell[int] = TopicCell(storage, context=ctx)
    await topic.subscribe("s")
    for v in range(1000):
        storage.replica.try_publish(v)
    whole: list[str] = []
    partial = storage.replica.read_stream

    def read_stream(subscriber: str, limit: int | None = None) -> Any:
        if limit is None:
            whole.append(subscriber)
        return partial(subscriber, limit)

    storage.replica.read_stream = read_stream  # type: ignore[method-assign]
    got = [v async for v in _take(topic.stream("s", batch=10), 100)]
    assert got == list(range(100))
    assert whole == []  # the unread suffix (the reader's value) is built only to wait


async def test_replicated_stream_with_batch_one_redelivers_only_the_held_element(
    ctx: Context,
) -> None:
    storage = ReplicatedTopic()
    topic: TopicCell[str] = TopicCell(storage, context=ctx)
    await topic.subscribe("s")
    for v in "abc":
        await topic.publish(v)
    stream = topic.stream("s", batch=1)
    assert await anext(stream) == "a"
    assert await anext(stream) == "b"  # "a" advanced when the next one was requested
    await stream.aclose()
    assert topic.read_stream("s") == ["b", "c"]
    for bad in (0, 1.5, True):
        with pytest.raises(ValueError, match="batch must be an int >= 1"):
            await anext(topic.stream("s", batch=bad))  # type: ignore[arg-type]


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
        getattr(topic, f"try_{op[0]}")(*op[1:])
        _, invalidated = getattr(model, op[0])(*op[1:])
        rerun = {s for s, p in probes.items() if p.runs != runs[s]}
        assert rerun == invalidated, op
        for s, p in probes.items():
            assert p.runs - runs[s] <= 1  # one wave per op
            assert p.seen[-1] == (model.reads().get(s),)
