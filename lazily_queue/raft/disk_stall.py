"""The driver's behaviour while its journal cannot be written.

When the disk refuses a write or an fsync (full, failing), the node stops stepping: it
sends and acknowledges nothing, drops incoming frames, fails waiting and new writes
with :class:`~.errors.StorageUnavailable` and keeps its applied state readable. Every
``disk_retry`` seconds it writes its unsynced records again and fsyncs them; the first
success releases what it held and the node carries on by itself. Both transitions are
logged once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from .errors import StorageUnavailable
from .fsync import Fsyncer
from .pipeline import CommitPipeline
from .ready import Ready
from .replica import Replica

log = logging.getLogger(__name__)


class DiskStall:
    """The stall and recovery half of :class:`~.driver.Driver` (which sets these up)."""

    replica: Replica
    pipeline: CommitPipeline
    fsync: Fsyncer
    disk_retry: float
    disk_observer: Callable[[str | None], None] | None
    _loop: asyncio.AbstractEventLoop | None
    _stalled_since: float | None
    _retry_at: float
    _recovering: bool

    def wake(self) -> None:
        raise NotImplementedError

    def _dispatch(self, ready: Ready) -> None:
        raise NotImplementedError

    def _dispatch_results(self, ready: Ready) -> None:
        raise NotImplementedError

    def _wake_state_waiters(self) -> None:
        raise NotImplementedError

    def _stall_text(self, outcome: str) -> str:
        return (f"node {self.replica.node_id} {self.pipeline.stall}; it acknowledges no "
                f"writes until the disk accepts them again ({outcome}; it retries by itself "
                "and reads go on)")

    def _stall(self, error: BaseException) -> None:
        """A write or fsync failed: nothing unsynced may be trusted or released."""
        journal = self.replica.journal
        journal.discard_unsynced()
        detail = error.strerror if isinstance(error, OSError) and error.strerror else error
        # the file the system refused (the metadata's, say), else the journal's log
        path = error.filename if isinstance(error, OSError) and error.filename else journal.path
        first = self.pipeline.failed(f"cannot write its journal {path}: {detail}")
        if self._loop is not None:
            self._retry_at = self._loop.time() + self.disk_retry
        if not first:
            return
        self._stalled_since = time.time()
        log.error("node %s %s; it acknowledges no writes until the disk accepts them again "
                  "and retries every %g s; reads go on", self.replica.node_id,
                  self.pipeline.stall, self.disk_retry,
                  extra={"event": "disk_full", "node": self.replica.node_id,
                         "reason": self.pipeline.stall})

        def failure(unknown: bool) -> BaseException:
            outcome = ("its outcome is unknown: it may commit once the disk recovers"
                       if unknown else "the operation was not applied")
            return StorageUnavailable(self._stall_text(outcome),
                                      applied=None if unknown else False)

        self._dispatch_results(Ready(completions=self.replica.fail_waiters(failure)))
        self._wake_state_waiters()
        self._notify_disk(self.pipeline.stall)

    def _retry_disk(self) -> None:
        if self._recovering or self._loop is None:
            return
        self._retry_at = self._loop.time() + self.disk_retry
        journal = self.replica.journal
        try:
            journal.write()
        except OSError:
            journal.discard_unsynced()
            return
        self._recovering = True
        self.fsync.start(self._loop, self._recovery_fsynced)

    def _recovery_fsynced(self, error: BaseException | None) -> None:
        self._recovering = False
        if error is not None:
            self.replica.journal.discard_unsynced()
            return
        since = self._stalled_since
        self._stalled_since = None
        lasted = time.time() - (since or time.time())
        log.warning("node %s: its journal accepts writes again after %.1f s; it acknowledges "
                    "writes again", self.replica.node_id, lasted,
                    extra={"event": "disk_recovered", "node": self.replica.node_id,
                           "seconds": round(lasted, 3)})
        for ready in self.pipeline.recovered():
            self._dispatch(ready)
        self._notify_disk(None)
        self.wake()

    def _notify_disk(self, reason: str | None) -> None:
        if self.disk_observer is not None:
            try:
                self.disk_observer(reason)
            except Exception:
                log.exception("node %s: disk observer failed", self.replica.node_id)
