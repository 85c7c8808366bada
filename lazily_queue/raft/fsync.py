"""Fsyncer: the journal's fsyncs, on the event loop's thread while they are quick and on
one dedicated worker thread while they are slow; counted and timed.

Handing an fsync to another thread and back costs two thread wake-ups, often more than
a quick fsync itself. While the last fsync took less than ``inline_below`` seconds and
little was written since the previous one (:class:`InlinePolicy`, shared with the
simulator), the driver runs the next one on the loop's thread (:meth:`Fsyncer.run`):
one operation at a time then waits for its disk and nothing else. Once one takes longer
or a step writes much (many operations at once), fsyncs go to the worker thread
(:meth:`Fsyncer.start`) and the loop prepares the next group meanwhile, so a slow disk
never stalls the loop for long and load keeps its group commit. Either way the caller
learns the outcome only after the fsync returned.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

#: Fsyncs quicker than this (seconds) let the next one run on the loop's thread...
INLINE_BELOW = 0.002
#: ... when it covers at most this many bytes written since the previous one.
INLINE_BYTES = 8192
#: Most seconds :meth:`Fsyncer.start` waits for the worker thread to take its fsync.
HANDOVER = 0.0005

Done = Callable[[BaseException | None], None]
_Job = tuple[asyncio.AbstractEventLoop, Done]


class InlinePolicy:
    """Where the next fsync runs: on the caller's thread while the last one took less
    than ``inline_below`` seconds (0: never) and it covers at most ``inline_bytes``
    written since the previous one started; else on a worker thread. A large write
    means load: the loop goes on with the next step while the worker fsyncs."""

    __slots__ = ("_covered", "inline_below", "inline_bytes", "last")

    def __init__(
        self, inline_below: float = INLINE_BELOW, inline_bytes: int = INLINE_BYTES
    ) -> None:
        self.inline_below = inline_below
        self.inline_bytes = inline_bytes
        #: How long the last fsync took (seconds).
        self.last = 0.0
        self._covered = 0

    def inline(self, written: int) -> bool:
        """Whether the fsync of everything up to ``written`` bytes (a running count)
        should run on the caller's thread."""
        return self.last < self.inline_below and written - self._covered <= self.inline_bytes

    def started(self, written: int) -> None:
        """An fsync covering everything up to ``written`` bytes started."""
        self._covered = written

    def took(self, seconds: float) -> None:
        """An fsync ended after ``seconds`` (wherever it ran)."""
        self.last = seconds


class Fsyncer:
    """Runs ``fsync`` (see the module docstring); one fsync at a time."""

    def __init__(
        self,
        fsync: Callable[[], None],
        node_id: str,
        policy: InlinePolicy | None = None,
        *,
        fsync_here: Callable[[], None] | None = None,
    ) -> None:
        """``fsync`` runs on the worker thread, ``fsync_here`` (default ``fsync``) on the
        caller's."""
        self._fsync = fsync
        self._fsync_here = fsync_here or fsync
        self._node_id = node_id
        self.policy = policy or InlinePolicy()
        self._jobs: queue.SimpleQueue[_Job | None] | None = None
        self._thread: threading.Thread | None = None
        self._taken = threading.Event()
        #: Fsyncs the worker took while :meth:`start` waited for it.
        self.handed_over = 0
        #: Successful fsyncs so far, and how many of them ran on the caller's thread.
        self.count = 0
        self.inline_count = 0
        #: Called with the duration in seconds of every successful fsync (metrics).
        self.observer: Callable[[float], None] | None = None

    def run(self) -> BaseException | None:
        """Run one fsync now, on this thread; returns its error (``None``: it succeeded)."""
        start = time.perf_counter()
        try:
            self._fsync_here()
        except Exception as exc:
            self.policy.took(time.perf_counter() - start)
            return exc
        self.inline_count += 1
        self._succeeded(time.perf_counter() - start)
        return None

    def start(self, loop: asyncio.AbstractEventLoop, done: Done) -> None:
        """Run one fsync on the worker thread; ``done(error)`` runs on ``loop`` once it
        ends (``None``: it succeeded). Waits up to :data:`HANDOVER` seconds, without
        the interpreter lock, for the worker to take it: otherwise the worker could wait
        for the lock until the caller's next blocking call, up to the interpreter's
        switch interval (5 ms by default), before its fsync even starts."""
        if self._jobs is None:
            self._jobs = queue.SimpleQueue()
            self._thread = threading.Thread(
                target=self._work, args=(self._jobs,), daemon=True,
                name=f"lazily-fsync-{self._node_id}")
            self._thread.start()
        self._taken.clear()
        self._jobs.put((loop, done))
        if self._taken.wait(HANDOVER):
            self.handed_over += 1

    def shutdown(self) -> None:
        """Wait for a running fsync and stop the thread (a later start makes another)."""
        if self._jobs is not None and self._thread is not None:
            self._jobs.put(None)
            self._thread.join()
        self._jobs = self._thread = None

    def _work(self, jobs: queue.SimpleQueue[_Job | None]) -> None:
        while (job := jobs.get()) is not None:
            self._taken.set()
            loop, done = job
            start = time.perf_counter()
            try:
                self._fsync()
            except Exception as exc:
                error: BaseException | None = exc
            else:
                error = None
            elapsed = time.perf_counter() - start
            try:
                loop.call_soon_threadsafe(self._finished, done, error, elapsed)
            except RuntimeError:  # the loop is closed: nobody waits any more
                return

    def _finished(self, done: Done, error: BaseException | None, elapsed: float) -> None:
        if error is None:
            self._succeeded(elapsed)
        else:
            self.policy.took(elapsed)
        done(error)

    def _succeeded(self, elapsed: float) -> None:
        self.policy.last = elapsed  # InlinePolicy.took, without the call
        self.count += 1
        if self.observer is not None:
            try:
                self.observer(elapsed)
            except Exception:
                log.exception("node %s: fsync observer failed", self._node_id)
