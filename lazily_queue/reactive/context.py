"""The reactive context: dependency tracking, batching and the effect flush.

All mutable graph state (the node being computed, batch depth, scheduled effects) lives
on a :class:`Context`. Nodes bind to one context at construction; a node never touches
another context's state. A context is single-threaded: use it from one thread (one
event loop) only.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, overload

if TYPE_CHECKING:
    from .effects import Effect
    from .nodes import Consumer

T = TypeVar("T")

DEFAULT_FLUSH_BUDGET = 1000


class ReactiveCycleError(RuntimeError):
    """A computed read itself, or effects kept re-triggering each other past the budget."""


class ReactiveContextError(RuntimeError):
    """A node was used with a context it does not belong to, or from the wrong thread."""


_created_lock = threading.Lock()
_claim_lock = threading.Lock()


class Context:
    """Owns the tracking state, the batch depth, the pending effect queue and the
    event loop that holds it (:meth:`claim_loop`).

    ``flush_budget`` bounds how many effect-flush rounds one outermost batch exit may
    run; effects that keep re-triggering each other beyond it raise
    :class:`ReactiveCycleError`.
    """

    __slots__ = (
        "_batch_depth",
        "_errors",
        "_flushing",
        "_observer",
        "_pending",
        "_write_epoch",
        "flush_budget",
        "loop",
        "loop_by",
        "loop_thread",
        "name",
        "thread",
    )

    # True once a second Context has been created in this process. Until then no read
    # can cross contexts, so consumers skip registering for that check (a per-run cost).
    _several: ClassVar[bool] = False
    _created: ClassVar[int] = 0

    def __init__(self, *, name: str = "", flush_budget: int = DEFAULT_FLUSH_BUDGET) -> None:
        if flush_budget < 1:
            raise ValueError(f"flush_budget must be >= 1, got {flush_budget}")
        with _created_lock:
            Context._created += 1
            if Context._created > 1:
                Context._several = True
        self.name = name
        self.flush_budget = flush_budget
        self._observer: Consumer | None = None
        self._batch_depth = 0
        self._flushing = False
        self._pending: list[Effect] = []
        self._write_epoch = 0
        self._errors: list[Exception] = []
        #: The event loop whose awaits use this context (see :meth:`claim_loop`), and
        #: the id and name of the thread it ran in at its last claim (0, ""), and
        #: what took it for that loop (``claim_loop``'s ``by``).
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread = 0
        self.loop_thread = ""
        self.loop_by = ""

    def __repr__(self) -> str:
        return f"Context({self.name!r}, depth={self._batch_depth}, pending={len(self._pending)})"

    def claim_loop(self, running: asyncio.AbstractEventLoop | None, by: str = "") -> bool:
        """Let ``running`` (the caller's event loop) use this context: ``True``, and
        ``running`` holds it from now on (taken by ``by``, said in errors), unless another
        loop holds it and is running (``False``, nothing changed). A loop holds the
        context until it stops, so loops may take turns (one ``asyncio.run`` after
        another) but never overlap."""
        return claim_loops({self: by}, running) is None

    # -- batching -------------------------------------------------------------------------

    @property
    def in_batch(self) -> bool:
        """True inside :meth:`batch` (or while effects are being flushed)."""
        return self._batch_depth > 0

    @overload
    def batch(self) -> Context: ...

    @overload
    def batch(self, run: Callable[[], T]) -> T: ...

    def batch(self, run: Callable[[], T] | None = None) -> T | Context:
        """Group writes: effects run once, at the outermost batch exit.

        ``ctx.batch(fn)`` runs ``fn`` inside a batch and returns its result;
        ``with ctx.batch():`` does the same for a block (``ctx.batch()`` is the context
        itself: entering it opens a batch, leaving it closes that batch).
        """
        if run is None:
            return self
        self._batch_depth += 1
        try:
            return run()
        finally:
            self._exit_batch()

    def _exit_batch(self) -> None:
        self._batch_depth -= 1
        if self._batch_depth == 0 and self._pending and not self._flushing:
            self._flush()

    def __enter__(self) -> Context:
        self._batch_depth += 1
        return self

    def __exit__(self, *exc: Any) -> None:
        self._batch_depth -= 1  # self._exit_batch inlined
        if self._batch_depth == 0 and self._pending and not self._flushing:
            self._flush()

    def _schedule(self, effect: Effect) -> None:
        self._pending.append(effect)

    def _after_write(self) -> None:
        """Flush now unless a batch (or a flush) is open."""
        if self._batch_depth == 0 and self._pending and not self._flushing:
            self._flush()

    def _flush(self) -> None:
        self._flushing = True
        self._batch_depth += 1
        rounds = 0
        try:
            while self._pending:
                rounds += 1
                if rounds > self.flush_budget:
                    stuck, self._pending = self._pending, []
                    for effect in stuck:  # let them be scheduled again by a later write
                        effect._scheduled = False
                    names = ", ".join(sorted({e.name or "<effect>" for e in stuck})[:5])
                    errors, self._errors = self._errors, []
                    cycle = ReactiveCycleError(
                        f"effects re-triggered each other for more than {self.flush_budget} "
                        f"flush rounds (still pending: {names}); an effect writes a source "
                        "it depends on, directly or through another effect"
                    )
                    if errors:
                        raise cycle from (
                            errors[0]
                            if len(errors) == 1
                            else ExceptionGroup("effects failed before the cycle", errors)
                        )
                    raise cycle
                batch, self._pending = self._pending, []
                try:
                    for effect in batch:
                        try:
                            effect._run_scheduled()
                        except Exception as exc:  # every effect still runs; first re-raised
                            self._errors.append(exc)
                except BaseException:
                    # KeyboardInterrupt & co. abort the flush: the effects this round did
                    # not reach stay scheduled for the next one instead of being lost
                    # with their _scheduled flag set (which would silence them forever).
                    pending = self._pending
                    self._pending = [e for e in batch if e._scheduled and e not in pending]
                    self._pending += pending
                    self._errors.clear()
                    raise
        finally:
            self._batch_depth -= 1
            self._flushing = False
        if self._errors:
            errors, self._errors = self._errors, []
            if len(errors) == 1:
                raise errors[0]
            raise ExceptionGroup(f"{len(errors)} effects failed during one flush", errors)

    # -- tracking -------------------------------------------------------------------------

    @contextmanager
    def untracked(self) -> Iterator[None]:
        """Reads inside this block register no dependency edges."""
        saved, self._observer = self._observer, None
        try:
            yield
        finally:
            self._observer = saved


_local = threading.local()


def claim_loops(claims: dict[Context, str], running: asyncio.AbstractEventLoop | None,
                ) -> Context | None:
    """:meth:`Context.claim_loop` for each context of ``claims`` (mapped to its ``by``),
    all or none: the first context another running loop holds (nothing changed), else
    ``None`` and ``running`` holds them all."""
    with _claim_lock:
        for ctx in claims:
            owner = ctx.loop
            if owner is not running and owner is not None and owner.is_running():
                return ctx
        if running is not None:
            thread, name = threading.get_ident(), threading.current_thread().name
            for ctx, by in claims.items():
                if ctx.loop is not running or ctx.thread != thread:  # or run elsewhere now
                    ctx.loop, ctx.thread, ctx.loop_thread, ctx.loop_by = (
                        running, thread, name, by)
        return None


def default_context() -> Context:
    """This thread's default context, created on first use."""
    ctx: Context | None = getattr(_local, "ctx", None)
    if ctx is None:
        ctx = Context(name=f"default:{threading.current_thread().name}")
        _local.ctx = ctx
    return ctx


def resolve_context(ctx: Context | None) -> Context:
    """``ctx`` itself, or this thread's default context."""
    return ctx if ctx is not None else default_context()


@overload
def batch(run: None = None, *, context: Context | None = None) -> Context: ...


@overload
def batch(run: Callable[[], T], *, context: Context | None = None) -> T: ...


def batch(
    run: Callable[[], T] | None = None, *, context: Context | None = None
) -> T | Context:
    """Batch on ``context`` (default: this thread's default context)."""
    ctx = resolve_context(context)
    if run is None:
        return ctx.batch()
    return ctx.batch(run)
