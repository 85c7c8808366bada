"""Release: how a driver hands out what its pipeline released (messages to the network,
results to their callers, membership to the links) and wakes those waiting for a step."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from .codec import encode_frames
from .errors import NodeNotRunning
from .network import RaftNetwork
from .pipeline import CommitPipeline
from .ready import Ready
from .replica import Replica

log = logging.getLogger(__name__)

#: Receives the state machine's events of each released step, in order.
EventSink = Callable[[list[object]], None]


class Release:
    """The releasing half of :class:`~.driver.Driver` (which sets these up)."""

    replica: Replica
    network: RaftNetwork
    pipeline: CommitPipeline
    tick_interval: float
    _loop: asyncio.AbstractEventLoop | None
    _running: bool
    _address: Callable[[str], str | None]
    #: Members added while their address was not known here yet.
    _unaddressed: set[str]
    _on_events: EventSink | None
    _state_waiters: list[asyncio.Future[None]]
    #: Releases that completed operations so far.
    _completed: int = 0

    def _fail_on_stop(self) -> None:
        """Every operation still waiting fails with :class:`NodeNotRunning`: no step
        will ever answer it."""
        node = self.replica.node_id

        def stopped(unknown: bool) -> BaseException:
            outcome = ("its outcome is unknown: it may have committed" if unknown
                       else "the operation was not applied")
            return NodeNotRunning(f"node {node} stopped while the operation waited ({outcome})",
                                  applied=None if unknown else False)

        self._dispatch_results(Ready(completions=self.replica.fail_waiters(stopped)))
        for fut in self._state_waiters:
            if not fut.done():
                fut.set_exception(NodeNotRunning(f"node {node} stopped"))
        self._state_waiters.clear()

    def _link(self, peer: str) -> None:
        """Hand a member to the network with its address (when known here: a member
        whose address record has not applied yet is handed over again once it has)."""
        address = self._address(peer)
        if address is None:
            if peer in self._unaddressed:
                return
            self._unaddressed.add(peer)
        else:
            self._unaddressed.discard(peer)
        self.network.add_peer(peer, address)

    def _link_addressed(self) -> None:
        for peer in [p for p in self._unaddressed if self._address(p) is not None]:
            log.info("node %s: member %s's address is known now", self.replica.node_id, peer)
            self._link(peer)

    def _dispatch(self, ready: Ready) -> None:
        for peer, added in ready.membership:
            if added:
                self._link(peer)
            else:
                self._unaddressed.discard(peer)
                self.network.remove_peer(peer)
        if ready.events and self._unaddressed:
            self._link_addressed()
        if ready.completions or ready.events or ready.orphans:
            self._dispatch_results(ready)
        sent: list[dict[str, Any]] | None = None
        frames: list[bytes] = []
        for peer, messages in ready.messages.items():
            if messages != sent:  # a leader's appends to followers in step are equal
                sent, frames = messages, encode_frames(messages)
            for frame in frames:
                self.network.send(peer, frame)
        if self._state_waiters:
            self._wake_state_waiters()

    def _wake_state_waiters(self) -> None:
        waiters, self._state_waiters = self._state_waiters, []
        for fut in waiters:
            if not fut.done():
                fut.set_result(None)

    def _dispatch_results(self, ready: Ready) -> None:
        """Reader events, completions and orphans (each handed over once)."""
        events, completions, orphans = ready.events, ready.completions, ready.orphans
        ready.events, ready.completions, ready.orphans = [], [], []
        if events and self._on_events is not None:
            try:
                self._on_events(events)
            except Exception:
                log.exception("node %s: an event observer failed", self.replica.node_id)
        if completions:
            self._completed += 1
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
        """Wait until the next step has been dispatched (while the journal cannot be
        written, no step runs: wait one tick instead)."""
        if self._loop is None or not self._running:
            raise NodeNotRunning("the node is not running")
        if self.pipeline.stall is not None:
            await asyncio.sleep(self.tick_interval)
            return
        fut: asyncio.Future[None] = self._loop.create_future()
        self._state_waiters.append(fut)
        await fut
