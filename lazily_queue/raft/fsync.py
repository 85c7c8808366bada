"""FsyncThread: the journal's fsyncs, run on one worker thread, counted and timed."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

log = logging.getLogger(__name__)


class FsyncThread:
    """Runs ``fsync`` off the event loop, one call at a time."""

    def __init__(self, fsync: Callable[[], None], node_id: str) -> None:
        self._fsync = fsync
        self._node_id = node_id
        self._pool: ThreadPoolExecutor | None = None
        #: Successful fsyncs so far.
        self.count = 0
        #: Called with the duration in seconds of every successful fsync (metrics).
        self.observer: Callable[[float], None] | None = None

    def start(
        self, loop: asyncio.AbstractEventLoop, done: Callable[[BaseException | None], None]
    ) -> None:
        """Run one fsync; ``done(error)`` runs on ``loop`` once it ends (``None``: it
        succeeded)."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="lazily-fsync")
        future = loop.run_in_executor(self._pool, self._timed)
        future.add_done_callback(lambda f: self._finished(f, done))

    def shutdown(self) -> None:
        """Wait for a running fsync and release the thread (a later start makes another)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def _timed(self) -> float:
        start = time.perf_counter()
        self._fsync()
        return time.perf_counter() - start

    def _finished(
        self, future: asyncio.Future[float], done: Callable[[BaseException | None], None]
    ) -> None:
        error = future.exception()
        if error is None:
            self.count += 1
            if self.observer is not None:
                try:
                    self.observer(future.result())
                except Exception:
                    log.exception("node %s: fsync observer failed", self._node_id)
        done(error)
