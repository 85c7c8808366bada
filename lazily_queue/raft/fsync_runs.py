"""Where a driver's fsyncs run and what their end releases: on the loop's thread while
they are quick and small, else on the :class:`~.fsync.Fsyncer`'s worker thread (see
:class:`~.fsync.InlinePolicy`)."""

from __future__ import annotations

import asyncio

from .fsync import Fsyncer
from .network import RaftNetwork
from .pipeline import CommitPipeline
from .ready import Ready
from .replica import Replica


class FsyncRuns:
    """The fsync half of :class:`~.driver.Driver` (which sets these up)."""

    replica: Replica
    network: RaftNetwork
    pipeline: CommitPipeline
    fsync: Fsyncer
    _loop: asyncio.AbstractEventLoop | None
    _running: bool

    def _dispatch(self, ready: Ready) -> None:
        raise NotImplementedError

    def _stall(self, error: BaseException) -> None:
        raise NotImplementedError

    def _step(self) -> None:
        raise NotImplementedError

    def _start_fsync(self) -> bool:
        """Start the fsync the pipeline wants, if any, once what may leave before it is
        sent: here while fsyncs are quick and small, else on the worker thread. True when
        it ran here and succeeded (what it covers has been released)."""
        if self._loop is None or self.pipeline.start_fsync() is None:
            return False
        self.network.flush()
        policy, written = self.fsync.policy, self.replica.journal.written_bytes
        inline = policy.inline(written)
        policy.started(written)
        if not inline:
            self.replica.journal.prepare_fsync()
            self.fsync.start(self._loop, self._fsynced)
            return False
        return self._synced(self.fsync.run())

    def _inline(self) -> bool:
        """Whether the next fsync runs here (see :class:`~.fsync.InlinePolicy`)."""
        return self.fsync.policy.inline(self.replica.journal.written_bytes)

    def _synced(self, error: BaseException | None) -> bool:
        """The fsync from :meth:`_start_fsync` ended (here or on the worker thread):
        release what it covers, or stall when it failed."""
        if error is not None:
            self._stall(error)
            return False
        for ready in self.pipeline.fsync_done():
            self._dispatch(ready)
        self.network.flush()  # acknowledgements leave before the rest of the step
        return True

    def _fsynced(self, error: BaseException | None) -> None:
        """A worker-thread fsync ended."""
        if not self._synced(error) or not self._running:
            return
        if self.replica.engine.is_leader:
            self._step()  # its own copy now counts: the commit index may move
            return
        self._start_fsync()  # what was written during that fsync
