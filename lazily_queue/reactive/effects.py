"""Effects: sinks that rerun when a dependency changes, after their previous cleanup."""

from __future__ import annotations

from collections.abc import Callable

from .context import Context, resolve_context
from .nodes import CHECK, CLEAN, DIRTY, Cleanup, Consumer, Producer, unlink


class Effect(Consumer):
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
        self._sources: dict[Producer, int] = {}
        self._collect: dict[Producer, int] | None = None
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
            unlink(source, self)
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


def effect(
    fn: Callable[[], Cleanup | None], *, context: Context | None = None, name: str = ""
) -> Effect:
    """Shorthand for :class:`Effect`; the effect runs once immediately."""
    return Effect(fn, context=context, name=name)
