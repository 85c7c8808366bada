"""Mesh events (peer up/down, frames), the queue that delivers them in order, and counters."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import anyio

from ._core._buffered import Signal

__all__ = ["EventStream", "Frame", "MeshEvent", "PeerCounters", "PeerDown", "PeerUp"]


@dataclass(slots=True)
class PeerUp:
    """An authenticated connection to ``peer_id`` started with this ``epoch``."""

    peer_id: int
    epoch: int


@dataclass(slots=True)
class PeerDown:
    """The connection of ``epoch`` to ``peer_id`` ended; ``reason`` says why."""

    peer_id: int
    epoch: int
    reason: str


@dataclass(slots=True)
class Frame:
    """One frame received from ``peer_id`` on the connection of ``epoch``."""

    peer_id: int
    epoch: int
    data: bytes


MeshEvent = PeerUp | PeerDown | Frame


@dataclass(slots=True)
class PeerCounters:
    """Per-peer metrics of a Mesh; all counts are cumulative."""

    frames_sent: int = 0
    frames_received: int = 0
    frames_dropped: int = 0
    connects: int = 0
    reconnects: int = 0
    connect_failures: int = 0
    refused: int = 0


class EventStream:
    """Bounded, single-loop queue of mesh events, consumed by one or more tasks.

    Frames count against ``capacity`` (producers wait when it is full, which pauses
    reading from that peer); peer up/down events are always accepted. Iterate with
    ``async for``, or take everything queued at once with ``receive_batch`` to avoid
    a task switch per event. After ``close`` the queue drains, then iteration ends
    and ``receive`` raises ``anyio.EndOfStream``.

    A consumer on the queue's own loop may also :meth:`set_listener`: the listener is
    called right after a frame is queued (not from inside itself: what it causes to be
    queued is left for it to take) and takes events with :meth:`take_nowait`; readers
    are woken only for what it leaves queued. Peer up/down events wake the readers
    only: they may be queued from inside the consumer's own calls (a link it closes).
    """

    def __init__(self, capacity: int = 65536) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be positive, got {capacity}")
        self._queue: deque[MeshEvent] = deque()
        self._frames = 0
        self.capacity = capacity
        self._readers: list[Signal] = []
        self._writers: list[Signal] = []
        self._closed = False
        self._listener: Callable[[], None] | None = None
        self._listening = False

    def __len__(self) -> int:
        return len(self._queue)

    @property
    def full(self) -> bool:
        """Whether a frame would be refused now (the queue is full or closed)."""
        return self._frames >= self.capacity or self._closed

    def set_listener(self, listener: Callable[[], None] | None) -> None:
        """Call ``listener`` after each event is queued (see the class docstring); it
        must not raise."""
        self._listener = listener

    # -- producers ----------------------------------------------------------------------

    def put_control(self, event: PeerUp | PeerDown) -> None:
        if self._closed:
            return
        self._queue.append(event)
        self._wake_readers()

    def put_frame_nowait(self, event: Frame) -> bool:
        """Queue a frame event; False when the queue is full (or closed)."""
        if self._frames >= self.capacity or self._closed:
            return False
        self._queue.append(event)
        self._frames += 1
        self._queued()
        return True

    def _queued(self) -> None:
        listener = self._listener
        if listener is not None and not self._listening:
            self._listening = True
            try:
                listener()
            finally:
                self._listening = False
        if self._readers and self._queue:
            self._wake_readers()

    async def wait_space(self) -> None:
        while self._frames >= self.capacity and not self._closed:
            waiter = Signal()
            self._writers.append(waiter)
            await waiter.wait()

    def close(self) -> None:
        self._closed = True
        self._wake_readers()
        writers, self._writers = self._writers, []
        for waiter in writers:
            waiter.fire()

    # -- consumers ----------------------------------------------------------------------

    def receive_nowait(self) -> MeshEvent:
        """The next event; ``anyio.WouldBlock`` if none is queued."""
        queue = self._queue
        if queue:
            event = queue.popleft()
            if type(event) is Frame:
                self._taken(1)
            return event
        if self._closed:
            raise anyio.EndOfStream
        raise anyio.WouldBlock

    async def receive(self) -> MeshEvent:
        while True:
            try:
                return self.receive_nowait()
            except anyio.WouldBlock:
                await self._wait()

    def take_nowait(self) -> list[MeshEvent]:
        """Every queued event, at once (an empty list when none is)."""
        queue = self._queue
        if not queue:
            return []
        batch = list(queue)
        queue.clear()
        frames = 0
        for event in batch:
            if type(event) is Frame:
                frames += 1
        self._taken(frames)
        return batch

    async def receive_batch(self, limit: int | None = None) -> list[MeshEvent]:
        """Wait for at least one event, then return every queued event (up to ``limit``)."""
        while not self._queue:
            if self._closed:
                raise anyio.EndOfStream
            await self._wait()
        queue = self._queue
        if limit is None or limit >= len(queue):
            batch = list(queue)
            queue.clear()
        else:
            batch = [queue.popleft() for _ in range(limit)]
        self._taken(sum(1 for event in batch if type(event) is Frame))
        return batch

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> MeshEvent:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    def _taken(self, frames: int) -> None:
        self._frames -= frames
        if self._writers and self._frames < self.capacity:
            writers, self._writers = self._writers, []
            for waiter in writers:
                waiter.fire()

    async def _wait(self) -> None:
        waiter = Signal()
        self._readers.append(waiter)
        await waiter.wait()

    def _wake_readers(self) -> None:
        readers, self._readers = self._readers, []
        for waiter in readers:
            waiter.fire()
