"""Graph nodes: the producer and consumer bases, Source and Computed (Slot and Effect
live in :mod:`.slots` and :mod:`.effects`).

Invalidation is push-mark / pull-recompute. A write marks direct dependents DIRTY and
the rest of the cone CHECK, and schedules the effects it reaches; a computed recomputes
on the next read, and only when one of its sources' versions actually moved. A computed
whose recomputed value equals the previous one keeps its version, so its dependents do
not rerun (the equality guard).

A computed is *linked* (registered as an observer of its sources) only while something
observes it; an unobserved computed validates itself on read by comparing versions, so
dropping it leaks nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from threading import get_ident
from typing import Generic, TypeVar

from .context import Context, ReactiveContextError, ReactiveCycleError, resolve_context

T = TypeVar("T")

CLEAN = 0
CHECK = 1
DIRTY = 2

Cleanup = Callable[[], None]


# The consumer running on each thread, whatever its context. A context only knows its
# own observer, so a read of a node whose context is not tracking looks here to catch a
# consumer of another context reading it. Empty while nothing runs anywhere, which
# keeps the check on the untracked read path to one global load. Consumers register
# only once the process has several contexts (Context._several).
running: dict[int, Consumer] = {}


def foreign_read(producer: Producer) -> None:
    consumer = running.get(get_ident())
    if consumer is not None and consumer.ctx is not producer.ctx:
        consumer._record(producer)  # raises ReactiveContextError


def equal(a: object, b: object) -> bool:
    if a is b:
        return True
    try:
        return bool(a == b)
    except Exception:
        return False


class Producer:
    """A node others can depend on: it has observers and a version."""

    __slots__ = ("_observers", "_version", "ctx", "name")

    def __init__(self, ctx: Context | None, name: str) -> None:
        self.ctx = resolve_context(ctx)
        self.name = name
        self._observers: dict[Consumer, None] = {}
        self._version = 0

    @property
    def version(self) -> int:
        """Bumped on every change (a Slot: on every invalidation)."""
        return self._version

    def _track(self) -> None:
        observer = self.ctx._observer
        if observer is not None:
            observer._record(self)
        elif running:
            foreign_read(self)

    def _add_observer(self, consumer: Consumer) -> None:
        self._observers[consumer] = None

    def _remove_observer(self, consumer: Consumer) -> None:
        self._observers.pop(consumer, None)

    def _refresh(self) -> None:
        """Bring the value up to date (a no-op for nodes without sources)."""

    def _changed(self) -> None:
        """Record a change and mark the dependent cone."""
        self._version += 1
        ctx = self.ctx
        ctx._write_epoch += 1
        if self._observers:
            propagate(self)
            ctx._after_write()


class Consumer:
    """A node that reads others: it records sources while it runs."""

    __slots__ = ()

    ctx: Context
    _sources: dict[Producer, int]
    _collect: dict[Producer, int] | None
    _state: int

    def _record(self, producer: Producer) -> None:
        if producer.ctx is not self.ctx:
            raise ReactiveContextError(
                f"{producer!r} belongs to context {producer.ctx.name!r} but was read while "
                f"computing a node of context {self.ctx.name!r}; nodes of different contexts "
                "cannot depend on each other"
            )
        collect = self._collect
        if collect is not None and producer not in collect:
            collect[producer] = producer._version

    def _sources_changed(self) -> bool:
        for source, seen in self._sources.items():
            try:
                source._refresh()
            except Exception:
                # A source that now fails has changed: rerun, so the error meets the
                # read in our own body (which may handle it) instead of the scheduler.
                return True
            if source._version != seen:
                return True
        return False

    def _run_tracked(self, fn: Callable[[], T], linked: bool) -> T:
        ctx = self.ctx
        saved = ctx._observer
        ctx._observer = self
        registered = ctx._several
        if registered:
            thread = get_ident()
            outer = running.get(thread)
            running[thread] = self
        self._collect = {}  # type: ignore[misc]
        try:
            return fn()
        finally:
            ctx._observer = saved
            if registered:
                if outer is None:
                    del running[thread]
                else:
                    running[thread] = outer
            new, self._collect = self._collect, None  # type: ignore[misc]
            old = self._sources
            self._sources = new  # type: ignore[misc]
            if linked and new.keys() != old.keys():  # usually the same edges as last run
                self._relink(old, new)

    def _relink(self, old: dict[Producer, int], new: dict[Producer, int]) -> None:
        for source in old:
            if source not in new:
                unlink(source, self)
        late = CLEAN
        for source, seen in new.items():
            if source not in old:
                link(source, self)
                # A write during this run to a source we were not yet linked to marked
                # nobody: catch it up here.
                if source._version != seen:
                    late = DIRTY
                elif late == CLEAN and isinstance(source, Computed) and source._state:
                    late = CHECK
        if late:
            self._mark(late)

    def _mark(self, state: int) -> bool:
        """Raise the state; return True when observers must be visited."""
        raise NotImplementedError


def link(source: Producer, consumer: Consumer) -> None:
    first = not source._observers
    source._add_observer(consumer)
    if first and isinstance(source, Computed):
        source._on_first_observer()


def unlink(source: Producer, consumer: Consumer) -> None:
    source._remove_observer(consumer)
    if not source._observers and isinstance(source, Computed):
        source._on_last_observer()


def propagate(root: Producer) -> None:
    stack: list[tuple[Consumer, int]] = [(c, DIRTY) for c in root._observers]
    while stack:
        node, state = stack.pop()
        if node._mark(state) and isinstance(node, Computed):
            stack.extend((c, CHECK) for c in node._observers)


class Source(Producer, Generic[T]):
    """A value written from outside; ``set`` is guarded by ``==``."""

    __slots__ = ("_value",)

    def __init__(self, value: T, *, context: Context | None = None, name: str = "") -> None:
        super().__init__(context, name)
        self._value = value

    def __repr__(self) -> str:
        return f"Source({self.name or hex(id(self))}, {self._value!r})"

    def get(self) -> T:
        self._track()
        return self._value

    __call__ = get

    def peek(self) -> T:
        """The value without registering a dependency."""
        return self._value

    def set(self, value: T) -> None:
        if equal(self._value, value):
            return
        self._value = value
        self._changed()


class Computed(Consumer, Producer, Generic[T]):
    """A lazy, memoized derivation whose dependencies are rebuilt on every recompute.

    A recompute that raises leaves no value: the error is not cached, every read
    recomputes (and raises) again, and a failed read is still a dependency of the
    reader, so the write that fixes it reruns that reader.
    """

    __slots__ = ("_checked_epoch", "_collect", "_computing", "_fn", "_has_value",
                 "_sources", "_state", "_value")

    def __init__(self, fn: Callable[[], T], *, context: Context | None = None, name: str = ""):
        Producer.__init__(self, context, name)
        self._fn = fn
        self._value: T | None = None
        self._has_value = False
        self._state = DIRTY
        self._sources: dict[Producer, int] = {}
        self._collect: dict[Producer, int] | None = None
        self._computing = False
        self._checked_epoch = -1

    def __repr__(self) -> str:
        return f"Computed({self.name or hex(id(self))})"

    @property
    def linked(self) -> bool:
        return bool(self._observers)

    def get(self) -> T:
        try:
            self._refresh()
        except BaseException:
            # A failed read is still a dependency: the change that fixes it must rerun
            # the reader. (Not when we are the node being computed: a cycle.)
            if not self._computing:
                self._track()
            raise
        self._track()
        return self._value  # type: ignore[return-value]

    __call__ = get

    def peek(self) -> T:
        """The up-to-date value without registering a dependency."""
        self._refresh()
        return self._value  # type: ignore[return-value]

    def _mark(self, state: int) -> bool:
        if self._state >= state:
            return False
        previous, self._state = self._state, state
        return previous == CLEAN

    def _refresh(self) -> None:
        if self._computing:
            raise ReactiveCycleError(f"{self!r} reads itself while computing")
        if not self._observers:
            # Unlinked: nobody marks us, so validate by versions.
            epoch = self.ctx._write_epoch
            if self._has_value and self._checked_epoch == epoch:
                return
            if not self._has_value or self._sources_changed():
                self._recompute(linked=False)
            self._checked_epoch = self.ctx._write_epoch
            self._state = CLEAN
            return
        if self._state == CHECK:
            self._state = DIRTY if self._sources_changed() else CLEAN
        if self._state == DIRTY or not self._has_value:
            self._recompute(linked=True)

    def _recompute(self, linked: bool) -> None:
        self._computing = True
        try:
            value = self._run_tracked(self._fn, linked)
        except BaseException:
            # Hold no value, so the next read recomputes (the error is not cached and
            # the previous value is not served as current), and stay CLEAN, so the next
            # write to a source still propagates through us to our observers. We were
            # validated at this epoch: becoming linked now must not mark us CHECK.
            self._value = None
            self._has_value = False
            self._state = CLEAN
            self._checked_epoch = self.ctx._write_epoch
            raise
        finally:
            self._computing = False
        self._state = CLEAN
        if not self._has_value or not equal(self._value, value):
            self._value = value
            self._has_value = True
            self._version += 1

    def _on_first_observer(self) -> None:
        # Becoming linked. Nobody marked us while unlinked, so unless we were validated
        # at the current write epoch we may be stale: validate on the next read. (A
        # refresh here would take the linked path, see CLEAN and keep a stale value.)
        if self._state == CLEAN and self._checked_epoch != self.ctx._write_epoch:
            self._state = CHECK
        for source in self._sources:
            link(source, self)
            # Marks stop at non-clean nodes, so a linked node whose source is not clean
            # must not be clean itself (the caller checks the same for our observer).
            if not self._state and isinstance(source, Computed) and source._state:
                self._state = CHECK

    def _on_last_observer(self) -> None:
        for source in self._sources:
            unlink(source, self)
        # Linked and clean means no write reached us since we were validated.
        self._checked_epoch = self.ctx._write_epoch if self._state == CLEAN else -1


def computed(fn: Callable[[], T], *, context: Context | None = None, name: str = "") -> Computed[T]:
    """Shorthand for :class:`Computed`."""
    return Computed(fn, context=context, name=name)
