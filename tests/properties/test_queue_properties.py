"""QueueCell against a tiny model of spec §2.3/§2.4, on random op sequences.

Every example draws a bound (unbounded or 1..4), the storage path (the deque's
``reporting_ops`` fast path, or a subclass that does not declare it and so goes through
the generic path), the flavor (the synchronous core or the awaitables) and whether the
readers are observed. Each op's
outcome, the state and — when observed — the exact invalidation set (rerun-counting
effects, one per reader kind) must match the model; at the end the queue is drained
and the popped sequence must equal the accepted pushes (nothing lost or duplicated).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lazily_queue import (
    EMPTY,
    QueueCell,
    QueuePopError,
    QueuePushError,
    StorageCapabilities,
    VecDequeStorage,
)
from lazily_queue.reactive import Context, Effect

READERS = ("head", "len", "is_empty", "is_full", "closed")


class GenericStorage(VecDequeStorage[Any]):
    """Same deque without the ``reporting_ops`` capability: the shell's generic path."""

    __slots__ = ()

    capabilities = StorageCapabilities(sync=True, peek=True)


@dataclass
class Model:
    capacity: int | None
    items: list[Any] = field(default_factory=list)
    closed: bool = False

    def push(self, value: Any) -> tuple[str | None, set[str]]:
        if self.closed:
            return "Closed", set()
        if self.capacity is not None and len(self.items) >= self.capacity:
            return "Full", set()
        n = len(self.items)
        self.items.append(value)
        changed = {"len"}
        if n == 0:
            changed |= {"head", "is_empty"}
        if self.capacity is not None and n + 1 == self.capacity:
            changed.add("is_full")
        return None, changed

    def pop(self) -> tuple[bool, Any, set[str]]:
        """``(True, element, changed)`` or ``(False, "Empty" | "Closed", set())``."""
        if not self.items:
            return False, ("Closed" if self.closed else "Empty"), set()
        n = len(self.items)
        value = self.items.pop(0)
        changed = {"head", "len"}
        if n == 1:
            changed.add("is_empty")
        if self.capacity is not None and n == self.capacity:
            changed.add("is_full")
        return True, value, changed

    def close(self) -> set[str]:
        if self.closed:
            return set()
        self.closed = True
        return {"closed"}


values = st.one_of(st.integers(-5, 5), st.none(), st.text(max_size=2))
ops = st.one_of(
    st.tuples(st.sampled_from(["push", "try_push"]), values),
    st.tuples(st.sampled_from(["pop", "try_pop"]), st.none()),
    st.tuples(st.just("close"), st.none()),
    st.tuples(st.just("batch"), st.lists(values, min_size=1, max_size=4)),
)
op_lists = st.lists(ops, max_size=40).map(
    # Keep most sequences open long enough to be interesting.
    lambda seq: [op for i, op in enumerate(seq) if op[0] != "close" or i > len(seq) // 2]
)


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop]:
    if os.environ.get("LAZILY_TEST_LOOP", "asyncio") == "uvloop":
        import uvloop

        return uvloop.new_event_loop
    return asyncio.new_event_loop


def label(outcome: Any) -> Any:
    if isinstance(outcome, (QueuePushError, QueuePopError)):
        return outcome.value
    return outcome


class Probes:
    def __init__(self, cell: QueueCell[Any]) -> None:
        readers = cell.readers()
        self.effects = {
            name: Effect(self._watch(reader), context=cell.ctx) for name, reader in readers.items()
        }
        self.base = {name: 0 for name in READERS}

    @staticmethod
    def _watch(reader: Any) -> Callable[[], None]:
        def run() -> None:
            reader.get()

        return run

    def baseline(self) -> None:
        self.base = {name: e.runs for name, e in self.effects.items()}

    def reruns(self) -> dict[str, int]:
        return {name: e.runs - self.base[name] for name, e in self.effects.items()}


class Driver:
    """Issues ops in one flavor; the async flavor awaits the non-waiting awaitables."""

    def __init__(self, cell: QueueCell[Any], flavor: str) -> None:
        self.cell = cell
        self.flavor = flavor

    async def push(self, value: Any) -> Any:
        if self.flavor == "async":
            return await self.cell.offer(value)
        return self.cell.try_push(value)

    async def pop(self) -> Any:
        if self.flavor == "async":
            return await self.cell.poll()
        return self.cell.try_pop()

    async def close(self) -> None:
        if self.flavor == "async":
            await self.cell.close()
        else:
            self.cell.try_close()

    async def batch(self, items: list[Any]) -> list[Any]:
        with self.cell.ctx.batch():
            return [await self.push(v) for v in items]


def check_state(cell: QueueCell[Any], model: Model) -> None:
    storage = cell.storage
    assert isinstance(storage, VecDequeStorage)
    assert storage.elements() == model.items
    assert cell.len() == len(model.items)
    assert cell.is_empty() is (not model.items)
    assert cell.is_full() is (model.capacity is not None and len(model.items) >= model.capacity)
    assert cell.is_closed() is model.closed
    head = cell.head()
    if model.items:
        assert head is not EMPTY and head == model.items[0]
        assert (head is None) is (model.items[0] is None)
    else:
        assert head is EMPTY


async def run_sequence(
    capacity: int | None, generic: bool, flavor: str, observed: bool, sequence: list[Any]
) -> None:
    storage: VecDequeStorage[Any] = (GenericStorage if generic else VecDequeStorage)(capacity)
    cell: QueueCell[Any] = QueueCell(storage, context=Context(name="prop"))
    model = Model(capacity)
    driver = Driver(cell, flavor)
    probes = Probes(cell) if observed else None
    accepted: list[Any] = []
    popped: list[Any] = []
    for kind, arg in sequence:
        if probes is not None:
            probes.baseline()
        if kind in ("push", "try_push"):
            want, changed = model.push(arg)
            assert label(await driver.push(arg)) == want
            if want is None:
                accepted.append(arg)
        elif kind in ("pop", "try_pop"):
            ok, want, changed = model.pop()
            got = await driver.pop()
            if ok:
                assert not isinstance(got, QueuePopError) and got == want
                assert (got is None) is (want is None)
                popped.append(got)
            else:
                assert isinstance(got, QueuePopError) and got.value == want
        elif kind == "close":
            changed = model.close()
            await driver.close()
        else:
            changed = set()
            wants = []
            for v in arg:
                want, more = model.push(v)
                wants.append(want)
                changed |= more
                if want is None:
                    accepted.append(v)
            assert [label(o) for o in await driver.batch(arg)] == wants
        if probes is not None:
            reruns = probes.reruns()
            assert {name for name, n in reruns.items() if n} == changed, (kind, arg, reruns)
            assert all(n <= 1 for n in reruns.values()), "one op or batch: one invalidation"
        check_state(cell, model)
    # Drain: nothing lost, nothing duplicated, FIFO.
    while True:
        got = await driver.pop()
        if isinstance(got, QueuePopError):
            assert got is (QueuePopError.Closed if model.closed else QueuePopError.Empty)
            break
        popped.append(got)
    assert popped == accepted


@settings(max_examples=300, deadline=None)
@given(
    capacity=st.one_of(st.none(), st.integers(1, 4)),
    generic=st.booleans(),
    flavor=st.sampled_from(["sync", "async"]),
    observed=st.booleans(),
    sequence=op_lists,
)
def test_queue_matches_model(
    capacity: int | None, generic: bool, flavor: str, observed: bool, sequence: list[Any]
) -> None:
    with asyncio.Runner(loop_factory=_loop_factory()) as runner:
        runner.run(run_sequence(capacity, generic, flavor, observed, sequence))


@settings(max_examples=100, deadline=None)
@given(capacity=st.integers(1, 4), generic=st.booleans(), extra=st.integers(0, 3))
def test_closed_beats_full(capacity: int, generic: bool, extra: int) -> None:
    storage: VecDequeStorage[Any] = (GenericStorage if generic else VecDequeStorage)(capacity)
    cell: QueueCell[Any] = QueueCell(storage, context=Context())
    for i in range(capacity):
        assert cell.try_push(i) is None
    assert cell.try_push("x") is QueuePushError.Full
    cell.try_close()
    for _ in range(extra + 1):
        assert cell.try_push("x") is QueuePushError.Closed
    assert [cell.try_pop() for _ in range(capacity)] == list(range(capacity))
    assert cell.try_pop() is QueuePopError.Closed


@settings(max_examples=100, deadline=None)
@given(sequence=op_lists)
def test_fast_and_generic_paths_agree(sequence: list[Any]) -> None:
    """The fast path and the generic path give identical outcomes and reader histories."""

    def trace(storage: VecDequeStorage[Any]) -> list[Any]:
        cell: QueueCell[Any] = QueueCell(storage, context=Context())
        seen: list[Any] = []
        readers = list(cell.readers().values())
        Effect(lambda: seen.append(tuple(r.get() for r in readers)), context=cell.ctx)
        out: list[Any] = []
        for kind, arg in sequence:
            if kind in ("push", "try_push"):
                out.append(label(cell.try_push(arg)))
            elif kind in ("pop", "try_pop"):
                out.append(label(cell.try_pop()))
            elif kind == "close":
                cell.try_close()
            else:
                with cell.ctx.batch():
                    out.append([label(cell.try_push(v)) for v in arg])
        return [out, seen]

    assert trace(VecDequeStorage(2)) == trace(GenericStorage(2))
    assert trace(VecDequeStorage()) == trace(GenericStorage())
