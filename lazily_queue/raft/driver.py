"""The asyncio driver: runs a :class:`Replica` on the event loop over a network.

One loop iteration is one step at most: frames received and operations proposed
during an iteration are handled together, so every proposal made in one iteration
becomes one replicated batch (group commit). Steps write their records at once but
fsync on a worker thread; the messages a step produced (votes, acknowledgements,
entries) are released in step order, only after an fsync that started after its
writes has finished. One fsync covers every step written while the previous one ran.
Results of applied entries and reader events need no local fsync when the cluster
has other members (an entry applies only once it is durable on a majority, and a
leader counts its own copy only after its entries left, i.e. after its fsync), so
they are released at once; a single-node cluster commits on its own disk alone and
holds them until the fsync as well.
A timer keeps the engine ticking for heartbeats and elections. Exceptions around
delivery and stepping are logged, never fatal; a malformed frame closes that link.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .codec import FrameError, decode_frame, encode_frames
from .errors import NodeNotRunning
from .network import RaftNetwork
from .replica import Proposal, Ready, Replica
from .state_machine import Event

log = logging.getLogger(__name__)

EventSink = Callable[[list[Event]], None]


class Driver:
    """Steps a replica whenever input arrives and every ``tick_interval`` seconds."""

    def __init__(
        self,
        replica: Replica,
        network: RaftNetwork,
        *,
        tick_interval: float = 0.02,
        on_events: EventSink | None = None,
        addresses: dict[str, str] | None = None,
    ) -> None:
        self.replica = replica
        self.network = network
        self.tick_interval = tick_interval
        self._on_events = on_events
        self._addresses = dict(addresses or {})
        self._loop: asyncio.AbstractEventLoop | None = None
        self._scheduled = False
        self._timer: asyncio.TimerHandle | None = None
        self._running = False
        self._stepping = False
        self.steps = 0
        self.bad_frames = 0
        self.step_errors = 0
        self.fsyncs = 0
        self._state_waiters: list[asyncio.Future[None]] = []
        self._held: deque[tuple[int, Ready]] = deque()
        self._written = 0
        self._synced = 0
        self._syncing = False
        self._fsync_pool: ThreadPoolExecutor | None = None
        self._stop_task: asyncio.Future[None] | None = None
        #: Called with the duration in seconds of every fsync (metrics).
        self.fsync_observer: Callable[[float], None] | None = None

    @property
    def running(self) -> bool:
        return self._running

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self.network.set_handlers(self._on_frame, self._on_peer)
        for peer in self.replica.engine.members:
            if peer != self.replica.node_id:
                self.network.add_peer(peer, self._address(peer))
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
            self.replica.journal.sync()
            self._synced = self._written
            self._release()
            await self.network.stop()
            if self._fsync_pool is not None:
                self._fsync_pool.shutdown(wait=True)
                self._fsync_pool = None
        for fut in self._state_waiters:
            if not fut.done():
                fut.set_exception(NodeNotRunning("node stopped"))

    def _address(self, peer: str) -> str | None:
        return self._addresses.get(peer) or self.replica.sm.addresses.get(peer)

    # -- input ----------------------------------------------------------------------------

    def propose(
        self,
        code: int,
        args: list[Any],
        *,
        timeout: float,
        on_orphan: Callable[[Any], None] | None = None,
    ) -> tuple[Proposal, asyncio.Future[Any]]:
        """Propose one op; the future resolves with its result once applied here."""
        if not self._running or self._loop is None:
            raise NodeNotRunning("the node is not running; start it with `async with node:`")
        fut: asyncio.Future[Any] = self._loop.create_future()

        def done(result: Any, error: BaseException | None) -> None:
            if fut.done():
                return
            if error is not None:
                fut.set_exception(error)
            else:
                fut.set_result(result)

        proposal = self.replica.propose(
            code, args, timeout=timeout, on_done=done, on_orphan=on_orphan
        )
        self.wake()
        return proposal, fut

    async def call(
        self,
        code: int,
        args: list[Any],
        *,
        timeout: float,
        on_orphan: Callable[[Any], None] | None = None,
    ) -> Any:
        """Propose and await; a cancelled caller leaves nothing half-done (see Replica.cancel)."""
        proposal, fut = self.propose(code, args, timeout=timeout, on_orphan=on_orphan)
        try:
            return await fut
        except asyncio.CancelledError:
            self.replica.cancel(proposal)
            raise

    def wake(self) -> None:
        """Run one step soon (once per loop iteration, however often it is called)."""
        if not self._scheduled and self._loop is not None and self._running:
            self._scheduled = True
            self._loop.call_soon(self._scheduled_step)

    def _on_frame(self, peer: str, frame: bytes) -> None:
        try:
            messages = decode_frame(frame)
        except FrameError as exc:
            self.bad_frames += 1
            self.network.close_peer(peer, f"malformed Raft frame: {exc}")
            return
        for message in messages:
            try:
                self.replica.receive(peer, message)
            except Exception:
                self.bad_frames += 1
                log.exception("node %s: message from %s failed; link closed",
                              self.replica.node_id, peer)
                self.network.close_peer(peer, "a message could not be processed")
                break
        self.wake()

    def _on_peer(self, peer: str, up: bool) -> None:
        self.replica.peer_connected(peer, up)
        self.wake()

    # -- stepping -------------------------------------------------------------------------

    def _arm_timer(self) -> None:
        if self._loop is not None and self._running:
            self._timer = self._loop.call_later(self.tick_interval, self._on_timer)

    def _on_timer(self) -> None:
        self._arm_timer()
        self._step()

    def _scheduled_step(self) -> None:
        self._scheduled = False
        self._step()

    def _step(self) -> None:
        if self._stepping:
            self.wake()
            return
        self._stepping = True
        try:
            ready = self.replica.step(sync=False)
            self.steps += 1
        except Exception:
            self.step_errors += 1
            log.exception("node %s: step failed", self.replica.node_id)
            return
        finally:
            self._stepping = False
        if ready.unsynced:
            self._written += 1
        if not self._held and self._written == self._synced:
            self._dispatch(ready)
            return
        if len(self.replica.engine.members) > 1:
            self._dispatch_results(ready)
        self._held.append((self._written, ready))
        self._start_fsync()

    def _start_fsync(self) -> None:
        if self._syncing or self._written == self._synced or self._loop is None:
            return
        if self._fsync_pool is None:
            self._fsync_pool = ThreadPoolExecutor(1, thread_name_prefix="lazily-fsync")
        self._syncing = True
        target = self._written
        loop = self._loop
        future = loop.run_in_executor(self._fsync_pool, self._timed_fsync)
        future.add_done_callback(lambda f: self._fsynced(f, target))

    def _timed_fsync(self) -> float:
        start = time.perf_counter()
        self.replica.journal.fsync()
        return time.perf_counter() - start

    def _fsynced(self, future: asyncio.Future[float], target: int) -> None:
        self._syncing = False
        error = future.exception()
        if error is not None:
            # Nothing unsynced may be acknowledged; without a durable journal the node
            # cannot go on safely.
            log.critical("node %s: fsync failed (%s); stopping the node", self.replica.node_id,
                         error)
            self._held.clear()
            self._stop_task = asyncio.ensure_future(self.stop())
            return
        self.fsyncs += 1
        if self.fsync_observer is not None:
            try:
                self.fsync_observer(future.result())
            except Exception:
                log.exception("node %s: fsync observer failed", self.replica.node_id)
        self._synced = max(self._synced, target)
        self._release()
        self._start_fsync()

    def _release(self) -> None:
        while self._held and self._held[0][0] <= self._synced:
            _, ready = self._held.popleft()
            self._dispatch(ready)

    def _dispatch(self, ready: Ready) -> None:
        for peer, added in ready.membership:
            if added:
                self.network.add_peer(peer, self._address(peer))
            else:
                self.network.remove_peer(peer)
        self._dispatch_results(ready)
        for peer, messages in ready.messages.items():
            for frame in encode_frames(messages):
                self.network.send(peer, frame)
        if self._state_waiters:
            waiters, self._state_waiters = self._state_waiters, []
            for fut in waiters:
                if not fut.done():
                    fut.set_result(None)

    def _dispatch_results(self, ready: Ready) -> None:
        """Reader events, completions and orphans (each handed over once)."""
        events, ready.events = ready.events, []
        completions, ready.completions = ready.completions, []
        orphans, ready.orphans = ready.orphans, []
        if events and self._on_events is not None:
            try:
                self._on_events(events)
            except Exception:
                log.exception("node %s: an event observer failed", self.replica.node_id)
        for callback, result, error in completions:
            try:
                callback(result, error)
            except Exception:
                log.exception("node %s: a completion callback failed", self.replica.node_id)
        for orphan, value in orphans:
            try:
                orphan(value)
            except Exception:
                log.exception("node %s: an orphan handler failed", self.replica.node_id)

    async def next_step(self) -> None:
        """Wait until the next step has been dispatched."""
        if self._loop is None or not self._running:
            raise NodeNotRunning("the node is not running")
        fut: asyncio.Future[None] = self._loop.create_future()
        self._state_waiters.append(fut)
        await fut
