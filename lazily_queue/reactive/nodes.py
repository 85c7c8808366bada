"""Graph nodes: Source, Computed, Slot and Effect.

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
from typing import Any, Generic, TypeVar

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
_running: dict[int, _Consumer] = {}


def _foreign_read(producer: _Producer) -> None:
    consumer = _running.get(get_ident())
    if consumer is not None and consumer.ctx is not producer.ctx:
        consumer._record(producer)  # raises ReactiveContextError


def _equal(a: object, b: object) -> bool:
    if a is b:
        return True
    try:
        return bool(a == b)
    except Exception:
        return False


class _Producer:
    """A node others can depend on: it has observers and a version."""

    __slots__ = ("_observers", "_version", "ctx", "name")

    def __init__(self, ctx: Context | None, name: str) -> None:
        self.ctx = resolve_context(ctx)
        self.name = name
        self._observers: dict[_Consumer, None] = {}
        self._version = 0

    @property
    def version(self) -> int:
        """Bumped on every change (a Slot: on every invalidation)."""
        return self._version

    def _track(self) -> None:
        observer = self.ctx._observer
        if observer is not None:
            observer._record(self)
        elif _running:
            _foreign_read(self)

    def _add_observer(self, consumer: _Consumer) -> None:
        self._observers[consumer] = None

    def _remove_observer(self, consumer: _Consumer) -> None:
        self._observers.pop(consumer, None)

    def _refresh(self) -> None:
        """Bring the value up to date (a no-op for nodes without sources)."""

    def _changed(self) -> None:
        """Record a change and mark the dependent cone."""
        self._version += 1
        ctx = self.ctx
        ctx._write_epoch += 1
        if self._observers:
            _propagate(self)
            ctx._after_write()


class _Consumer:
    """A node that reads others: it records sources while it runs."""

    __slots__ = ()

    ctx: Context
    _sources: dict[_Producer, int]
    _collect: dict[_Producer, int] | None
    _state: int

    def _record(self, producer: _Producer) -> None:
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
            outer = _running.get(thread)
            _running[thread] = self
        self._collect = {}  # type: ignore[misc]
        try:
            return fn()
        finally:
            ctx._observer = saved
            if registered:
                if outer is None:
                    del _running[thread]
                else:
                    _running[thread] = outer
            new, self._collect = self._collect, None  # type: ignore[misc]
            old = self._sources
            self._sources = new  # type: ignore[misc]
            if linked and new.keys() != old.keys():  # usually the same edges as last run
                self._relink(old, new)

    def _relink(self, old: dict[_Producer, int], new: dict[_Producer, int]) -> None:
        for source in old:
            if source not in new:
                _unlink(source, self)
        late = CLEAN
        for source, seen in new.items():
            if source not in old:
                _link(source, self)
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


def _link(source: _Producer, consumer: _Consumer) -> None:
    first = not source._observers
    source._add_observer(consumer)
    if first and isinstance(source, Computed):
        source._on_first_observer()


def _unlink(source: _Producer, consumer: _Consumer) -> None:
    source._remove_observer(consumer)
    if not source._observers and isinstance(source, Computed):
        source._on_last_observer()


def _propagate(root: _Producer) -> None:
    stack: list[tuple[_Consumer, int]] = [(c, DIRTY) for c in root._observers]
    while stack:
        node, state = stack.pop()
        if node._mark(state) and isinstance(node, Computed):
            stack.extend((c, CHECK) for c in node._observers)


class Source(_Producer, Generic[T]):
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
        if _equal(self._value, value):
            return
        self._value = value
        self._changed()


class Slot(_Producer, Generic[T]):
    """A memoized reader with no graph dependencies; invalidated explicitly.

    The body reads external state untracked. :meth:`invalidate` is structural: it always
    reruns dependents, whether or not the recomputed value differs. With no observers
    it only marks the slot stale (O(1)); the value is derived on the next read. Slots
    made by a :class:`SlotGroup` share one stale mask while none of them is observed.
    """

    __slots__ = ("_bit", "_fn", "_group", "_valid", "_value")

    def __init__(
        self,
        fn: Callable[[], T],
        *,
        context: Context | None = None,
        name: str = "",
        _group: SlotGroup | None = None,
        _bit: int = 0,
    ) -> None:
        super().__init__(context, name)
        self._fn = fn
        self._valid = False
        self._value: T | None = None
        self._group = _group
        self._bit = _bit

    def __repr__(self) -> str:
        return f"Slot({self.name or hex(id(self))})"

    def get(self) -> T:
        group = self._group
        if group is not None and group._stale & self._bit:
            group._sync()
        observer = self.ctx._observer
        if observer is not None:
            observer._record(self)
        elif _running:
            _foreign_read(self)
        if not self._valid:
            ctx = self.ctx
            saved, ctx._observer = ctx._observer, None
            try:
                self._value = self._fn()
            finally:
                ctx._observer = saved
            self._valid = True
        return self._value  # type: ignore[return-value]

    __call__ = get

    @property
    def version(self) -> int:
        self._refresh()
        return self._version

    @property
    def is_stale(self) -> bool:
        """True when the next read recomputes."""
        self._refresh()
        return not self._valid

    def _refresh(self) -> None:
        group = self._group
        if group is not None and group._stale & self._bit:
            group._sync()

    def _add_observer(self, consumer: _Consumer) -> None:
        if not self._observers and self._group is not None:
            self._group._sync()
            self._group._hot += 1
        self._observers[consumer] = None

    def _remove_observer(self, consumer: _Consumer) -> None:
        if self._observers.pop(consumer, 0) is None and not self._observers:
            if self._group is not None:
                self._group._hot -= 1

    def invalidate(self) -> None:
        self._valid = False
        self._changed()


class SlotGroup:
    """The reader kinds of one cell: slots addressed by bit, invalidated by mask.

    While no slot of the group is observed, :meth:`invalidate` only ORs the mask into
    a shared stale set and bumps the context's write epoch; the slots' versions catch
    up on their next read. With an observer it clears each named slot in one batch.
    """

    __slots__ = ("_hot", "_slots", "_stale", "ctx")

    def __init__(self, context: Context | None = None) -> None:
        self.ctx = resolve_context(context)
        self._slots: list[Slot[Any]] = []
        self._stale = 0
        self._hot = 0

    def slot(self, fn: Callable[[], T], name: str = "") -> Slot[T]:
        """A new slot of this group; its bit is ``1 << index``."""
        bit = 1 << len(self._slots)
        s: Slot[T] = Slot(fn, context=self.ctx, name=name, _group=self, _bit=bit)
        self._slots.append(s)
        return s

    @property
    def observed(self) -> bool:
        return self._hot > 0

    def _sync(self) -> None:
        stale, self._stale = self._stale, 0
        index = 0
        while stale:
            if stale & 1:
                s = self._slots[index]
                s._valid = False
                s._version += 1
            stale >>= 1
            index += 1

    def invalidate(self, mask: int) -> None:
        """Clear every slot whose bit is in ``mask``, as one atomic transition."""
        if not self._hot:
            # Bits already stale need no new epoch: no reader of theirs has validated
            # since they went stale (a read syncs the whole stale set).
            if mask & ~self._stale:
                self._stale |= mask
                self.ctx._write_epoch += 1
            return
        if self._stale:
            self._sync()
        ctx = self.ctx
        ctx._batch_depth += 1
        try:
            slots = self._slots
            index = 0
            while mask:
                if mask & 1:
                    slots[index].invalidate()
                mask >>= 1
                index += 1
        finally:
            ctx._exit_batch()


class Computed(_Consumer, _Producer, Generic[T]):
    """A lazy, memoized derivation whose dependencies are rebuilt on every recompute.

    A recompute that raises leaves no value: the error is not cached, every read
    recomputes (and raises) again, and a failed read is still a dependency of the
    reader, so the write that fixes it reruns that reader.
    """

    __slots__ = ("_checked_epoch", "_collect", "_computing", "_fn", "_has_value",
                 "_sources", "_state", "_value")

    def __init__(self, fn: Callable[[], T], *, context: Context | None = None, name: str = ""):
        _Producer.__init__(self, context, name)
        self._fn = fn
        self._value: T | None = None
        self._has_value = False
        self._state = DIRTY
        self._sources: dict[_Producer, int] = {}
        self._collect: dict[_Producer, int] | None = None
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
        if not self._has_value or not _equal(self._value, value):
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
            _link(source, self)
            # Marks stop at non-clean nodes, so a linked node whose source is not clean
            # must not be clean itself (the caller checks the same for our observer).
            if not self._state and isinstance(source, Computed) and source._state:
                self._state = CHECK

    def _on_last_observer(self) -> None:
        for source in self._sources:
            _unlink(source, self)
        # Linked and clean means no write reached us since we were validated.
        self._checked_epoch = self.ctx._write_epoch if self._state == CLEAN else -1


class Effect(_Consumer):
    """A sink that reruns when a dependency changes, after its previous cleanup.

    ``fn`` may return a cleanup callable, run before each rerun and on :meth:`dispose`.
    Reruns are queued and flushed at the outermost batch exit. If the constructor
    raises (the first run, or the flush of the writes it made), the effect is disposed
    and the error propagates.
    """

    __slots__ = ("_cleanup", "_collect", "_disposed", "_fn", "_scheduled", "_sources",
                 "_state", "ctx", "name", "runs")

    def __init__(
        self,
        fn: Callable[[], Cleanup | None],
        *,
        context: Context | None = None,
        name: str = "",
    ) -> None:
        self.ctx = resolve_context(context)
        self.name = name
        self._fn = fn
        self._sources: dict[_Producer, int] = {}
        self._collect: dict[_Producer, int] | None = None
        self._cleanup: Cleanup | None = None
        self._state = DIRTY
        self._scheduled = False
        self._disposed = False
        self.runs = 0
        # The first run is batched like a flushed rerun: writes it makes flush after it
        # (not in the middle of it), including its own rerun if it wrote a dependency.
        ctx = self.ctx
        ctx._batch_depth += 1
        try:
            try:
                self._run()
            finally:
                ctx._exit_batch()
        except BaseException:
            self.dispose()  # the caller gets no handle to dispose a half-made effect
            raise

    def __repr__(self) -> str:
        return f"Effect({self.name or hex(id(self))}, runs={self.runs})"

    @property
    def disposed(self) -> bool:
        return self._disposed

    def _mark(self, state: int) -> bool:
        if self._state < state:
            self._state = state
        if not self._scheduled and not self._disposed:
            self._scheduled = True
            self.ctx._schedule(self)
        return False

    def _run_scheduled(self) -> None:
        self._scheduled = False
        if self._disposed:
            return
        if self._state == CHECK:
            self._state = DIRTY if self._sources_changed() else CLEAN
        if self._state == DIRTY:
            self._run()

    def _run(self) -> None:
        cleanup, self._cleanup = self._cleanup, None
        if cleanup is not None:
            cleanup()
        self._state = CLEAN
        self.runs += 1
        try:
            cleanup = self._run_tracked(self._fn, linked=True)
        finally:
            if self._disposed:  # disposed by its own run: drop the edges the run made
                self._detach()
        if cleanup is not None and not callable(cleanup):
            raise TypeError(
                f"{self!r}: an effect function must return None or a cleanup callable, "
                f"not {type(cleanup).__name__}"
            )
        if self._disposed:
            if cleanup is not None:
                cleanup()
            return
        self._cleanup = cleanup

    def _detach(self) -> None:
        for source in self._sources:
            _unlink(source, self)
        self._sources = {}

    def dispose(self) -> None:
        """Run the cleanup and detach from every source; idempotent."""
        if self._disposed:
            return
        self._disposed = True
        self._detach()
        cleanup, self._cleanup = self._cleanup, None
        if cleanup is not None:
            cleanup()


def computed(fn: Callable[[], T], *, context: Context | None = None, name: str = "") -> Computed[T]:
    """Shorthand for :class:`Computed`."""
    return Computed(fn, context=context, name=name)


def effect(
    fn: Callable[[], Cleanup | None], *, context: Context | None = None, name: str = ""
) -> Effect:
    """Shorthand for :class:`Effect`; the effect runs once immediately."""
    return Effect(fn, context=context, name=name)

