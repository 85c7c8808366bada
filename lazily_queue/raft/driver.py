"""The asyncio driver: runs a :class:`Replica` on the event loop over a network.

A step runs right after each run of frames the network hands over (with the pending
commit publication, if one is: after the callers it completed) and once per loop
iteration in which operations were proposed, so every proposal made in one iteration
becomes one replicated batch (group commit); a :meth:`Driver.call` made while nothing
else is ready to run steps at once (no other proposal could join its batch), and a
scheduled step waits for the callers whose operations completed after it was scheduled
(what they propose joins it). A step has two halves, :meth:`~.replica.Replica.prepare`
(proposals become log entries) and :meth:`~.replica.Replica.tick` (commits, applies,
timers); after each half the journal is written at once, after a leader's appends have
left. What a step produced is released by the :class:`~.pipeline.CommitPipeline`
(votes and acknowledgements only after an fsync covering their writes). While fsyncs
are quick (:mod:`.fsync`) they run on the loop's thread, the first between the two
halves, so a leader's tick counts its own copy of what it just appended (a cluster of
one commits in the step that appended); while they are slow they run on a worker
thread, one covering every step written while the previous one ran. A leader's new
commit index reaches the followers with its next append or, when no step is about to
run, right after the loop's other ready callbacks (the caller whose operation committed
runs first). A timer keeps the engine ticking for heartbeats and elections. Exceptions
around delivery and stepping are logged, never fatal; a malformed frame closes that
link. While the disk refuses writes, see :class:`~.disk_stall.DiskStall`.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from typing import Any

from ..errors import check_loop
from .calls import Calls
from .disk_stall import DiskStall
from .errors import NodeNotRunning, StorageUnavailable
from .fsync import Fsyncer
from .fsync_runs import FsyncRuns
from .incoming import Incoming
from .network import RaftNetwork
from .pipeline import CommitPipeline
from .proposals import Proposal
from .ready import Ready
from .release import EventSink, Release
from .replica import Replica
from .silence import Silence

log = logging.getLogger(__name__)

__all__ = ["Driver", "EventSink"]


class Driver(Incoming, Release, DiskStall, FsyncRuns, Calls):
    """Steps a replica whenever input arrives and every ``tick_interval`` seconds; a
    peer's address is ``address_of(peer)``."""

    def __init__(
        self,
        replica: Replica,
        network: RaftNetwork,
        *,
        tick_interval: float = 0.02,
        on_events: EventSink | None = None,
        address_of: Callable[[str], str | None] = lambda _peer: None,
        disk_retry: float = 1.0,
    ) -> None:
        self.replica = replica
        self.network = network
        self.tick_interval = tick_interval
        self.disk_retry = disk_retry
        replica.snapshots.retry_delay = disk_retry
        replica.snapshots.writer.background = True  # snapshot files are written off the loop
        replica.snapshots.link_ready = lambda node: network.send_ready(node.id)
        self._on_events = on_events
        self._address = address_of
        self._unaddressed: set[str] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._scheduled = False
        self._input = False  # something arrived since the last step began
        self._scheduled_at = 0  # self._completed when the pending step was scheduled
        self._timer: asyncio.TimerHandle | None = None
        self._running = False
        self._stepping = False
        self._publishing = False  # a commit publication is scheduled
        self._own_callbacks = (self._scheduled_step, self._publish_commit)
        self._frame_bytes = replica.max_frame_bytes  # fixed by the configuration
        replica.silence = Silence(replica.clock)
        self._heard, self._clock = replica.silence.heard, replica.clock
        self.steps = 0
        self.bad_frames = 0
        self.step_errors = 0
        self.stalled_frames = 0
        self._state_waiters: list[asyncio.Future[None]] = []
        self.pipeline = CommitPipeline()
        self._stalled_since: float | None = None
        self._retry_at = 0.0
        self._recovering = False
        journal = replica.journal
        self.fsync = Fsyncer(journal.fsync, replica.node_id,
                             fsync_here=functools.partial(journal.fsync, detached=False))
        #: Called with the reason when the journal stops accepting writes, ``None`` when
        #: it accepts them again.
        self.disk_observer: Callable[[str | None], None] | None = None
        #: Called after every step, on the loop, with no argument (state watchers that
        #: must not cost a task switch per step); an observer must be quick.
        self.step_observers: list[Callable[[], None]] = []
        self.call_observer = None

    @property
    def running(self) -> bool:
        return self._running

    @property
    def disk_error(self) -> str | None:
        """Why the journal cannot be written, while it cannot."""
        return self.pipeline.stall

    @property
    def disk_error_since(self) -> float | None:
        """``time.time()`` when the journal stopped accepting writes."""
        return self._stalled_since

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self.network.set_handlers(self._on_frame, self._on_peer, self._on_frames)
        for peer in self.replica.engine.members:
            if peer != self.replica.node_id:
                self._link(peer)
        await self.network.start()
        self._running = True
        self._arm_timer()
        self.wake()

    async def stop(self) -> None:
        if not self._running:
            return
        self._running = False
        if self._timer is not None:
            self._timer.cancel()
        try:
            self._step()
        finally:
            try:
                self.replica.journal.sync()
            except OSError as exc:
                log.error("node %s: the journal could not be written at stop (%s); what "
                          "it held is not released", self.replica.node_id, exc)
            else:
                for ready in self.pipeline.recovered():
                    self._dispatch(ready)
            await self.network.stop()
            self.fsync.shutdown()
            self.replica.snapshots.close()
        self._fail_on_stop()

    # -- input ----------------------------------------------------------------------------

    def check_loop(self) -> None:
        """Raise :class:`ThreadSafetyError` unless called on the loop the node runs on."""
        check_loop(self._loop, self.owner)

    def owner(self) -> str:
        """The node, as errors name it."""
        return f"node {self.replica.node_id}"

    def propose(
        self,
        code: int,
        args: list[Any],
        *,
        timeout: float,
        on_orphan: Callable[[Any], None] | None = None,
        step_now: bool = False,
        encoded: bytes | None = None,
    ) -> tuple[Proposal, asyncio.Future[Any]]:
        """Propose one op (``encoded`` as :meth:`encode` gave it, or ``None``); the future
        resolves with its result once applied here. With ``step_now``, an idle driver
        steps at once (see :meth:`_idle`) instead of in the loop's next iteration: the
        future may be resolved on return."""
        if not self._running or self._loop is None:
            raise NodeNotRunning("the node is not running; start it with `async with node:`",
                                 applied=False)
        self.check_loop()
        if self.pipeline.stall is not None:
            raise StorageUnavailable(self._stall_text("the operation was not applied"),
                                     applied=False)
        fut: asyncio.Future[Any] = self._loop.create_future()

        def done(result: Any, error: BaseException | None) -> None:
            if fut.done():
                if fut.cancelled() and error is None and on_orphan is not None:
                    # The caller went away after the op was applied but before this
                    # completion ran (Replica.cancel saw it done): hand the result to
                    # on_orphan, as for an orphan resolved later.
                    on_orphan(result)
                return
            if error is not None:
                fut.set_exception(error)
            else:
                fut.set_result(result)

        proposal = self.replica.propose(
            code, args, timeout=timeout, on_done=done, on_orphan=on_orphan, encoded=encoded
        )
        if step_now and self._idle():
            self._input = True
            try:
                self._step()
            except Exception:
                self.step_errors += 1
                log.exception("node %s: step failed", self.replica.node_id)
        else:
            self.wake()
        return proposal, fut

    def _idle(self) -> bool:
        """Whether a step now gathers what one in the loop's next iteration would: no step
        pending with input or running, nothing held or syncing, quick fsyncs, and no
        callback but the driver's own bookkeeping ready to run in this iteration (nothing
        else can propose before it ends)."""
        return ((not self._scheduled or not self._input) and not self._stepping
                and self.pipeline.idle and self._inline() and not self._others_ready())

    def step_if_idle(self) -> bool:
        """Run the step :meth:`wake` scheduled now, when nothing else ready to run in this
        iteration could propose before it would have run (see :meth:`_idle`): what a
        callback of its own proposed (a client's requests just read) is then applied,
        and answered, before that callback returns, as :meth:`propose` does with
        ``step_now``. True when it stepped."""
        if not (self._input and self._scheduled and not self._stepping and not self._publishing
                and self._running and self.pipeline.idle and self._inline()
                and not self._others_ready()):
            return False
        try:
            self._step()
        except Exception:
            self.step_errors += 1
            log.exception("node %s: step failed", self.replica.node_id)
        return True

    def _others_ready(self) -> bool:
        """Whether a callback other than a scheduled step or commit publication (neither
        proposes) is ready to run; True when the loop does not show them."""
        ready = getattr(self._loop, "_ready", None)
        if not ready:
            return ready is None
        own = self._own_callbacks
        for handle in ready:
            if not handle._cancelled and handle._callback not in own:
                return True
        return False

    def wake(self) -> None:
        """Run one step soon (once per loop iteration, however often it is called)."""
        self._input = True
        if not self._scheduled and self._loop is not None and self._running:
            self._scheduled = True
            self._scheduled_at = self._completed
            self._loop.call_soon(self._scheduled_step)

    # -- stepping -------------------------------------------------------------------------

    def _arm_timer(self) -> None:
        if self._loop is not None and self._running:
            self._timer = self._loop.call_later(self.tick_interval, self._on_timer)

    def _on_timer(self) -> None:
        self._arm_timer()
        if self.pipeline.stall is None:
            self._step()
        elif self._loop is not None and self._loop.time() >= self._retry_at:
            self._retry_disk()

    def _scheduled_step(self) -> None:
        if not self._input:  # a step already ran since the wake-up
            self._scheduled = False
            return
        if self._completed != self._scheduled_at and self._loop is not None:
            # Operations completed since this was scheduled: their callers run first, and
            # what they propose joins this step.
            self._scheduled_at = self._completed
            self._loop.call_soon(self._scheduled_step)
            return
        self._scheduled = False
        self._step()

    def _step(self) -> None:
        if self._stepping:
            self.wake()
            return
        if self.pipeline.stall is not None:
            return
        self._stepping = True
        self._input = False
        try:
            self._advance()
        finally:
            self._stepping = False
        self.network.flush()
        if (not self._publishing and self._loop is not None
                and self.replica.engine.commit_unsent):
            self._publishing = True
            self._loop.call_soon(self._publish_commit)
        for observer in self.step_observers:
            try:
                observer()
            except Exception:
                log.exception("node %s: a step observer failed", self.replica.node_id)

    def _publish_commit(self) -> None:
        """A leader's new commit index reaches the followers now unless a step is about to
        run (it appends what was proposed meanwhile, commit index included, or schedules
        this again); frames that arrived while it was pending step first."""
        if (self._scheduled and self._input) or self._stepping or not self._running:
            self._publishing = False
            return
        if self._input:
            self._step()  # still publishing: the step schedules no other publication
        self._publishing = False
        if self.pipeline.stall is not None or not self.replica.commit_unsent:
            return  # a step since carried the commit index (it appended the next proposal)
        self._half(self.replica.publish_commit)
        self.network.flush()

    def _advance(self) -> None:
        """One step: :meth:`Replica.prepare`, then :meth:`Replica.tick`, each written at
        once. The fsync of what the first half wrote starts between the two: run here
        (:meth:`_inline`), the tick counts this member's copy of what it just appended;
        on the worker thread, it runs while the tick applies, so what it releases (a
        follower's acknowledgement) does not wait for the applying."""
        if not self._half(self.replica.prepare):
            return
        self.steps += 1
        self._start_fsync()
        if self.pipeline.stall is not None:
            return
        if self._half(self.replica.tick) and self._start_fsync() and self.replica.engine.is_leader:
            self.wake()  # the tick wrote and that is durable now: the commit index may move

    def _half(self, half: Callable[[], Ready]) -> bool:
        """Run one half of a step, write what it recorded and dispatch what may leave;
        False when it failed or the journal refused the write."""
        try:
            ready = half()
        except Exception:
            self.step_errors += 1
            log.exception("node %s: step failed", self.replica.node_id)
            return False
        released, error = self.pipeline.stepped(ready, self.replica.journal.write,
                                                self._send_early)
        for out in released:
            self._dispatch(out)
        if self._state_waiters:  # the step was dispatched, even when nothing left
            self._wake_state_waiters()
        if error is not None:
            self._stall(error)
            return False
        return True

    def _send_early(self, ready: Ready) -> None:
        """Messages that need no fsync leave now, before the step's journal write."""
        self._dispatch(ready)
        self.network.flush()
