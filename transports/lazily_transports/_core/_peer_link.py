"""One peer's link inside a Mesh: the current connection, its epoch and counters."""

from __future__ import annotations

import asyncio
import functools
import logging
import ssl
import time

import anyio

from ..abc import DataChannel, LinkAttribute
from ..config import LinkConfig
from ..errors import FrameTooLargeError
from ..events import EventStream, Frame, PeerDown, PeerUp
from ..schemes import SchemeTable
from ..streams import LinkStream
from ._authentication import PeerVetter
from ._backoff import Backoff
from ._buffered import BufferedChannel
from ._peer_reach import PeerReach
from ._pump import pump_frames, pump_outcome
from ._refusal_log import RefusalLog

__all__ = ["PeerLink"]

logger = logging.getLogger("lazily_transports.mesh")


class PeerLink(PeerReach):
    """Carries frames to and from one peer over a sequence of connections (epochs).

    Only one connection is current; when it ends (or a newer one replaces it) its
    queued frames are discarded and a ``PeerDown`` is emitted before the next
    ``PeerUp``, so no frame of an older epoch follows a newer one. Frames go through
    the current stream's raw channel: the wrapper costs nothing per frame here.
    While no connection is current, it dials or probes the peer (:class:`PeerReach`).
    """

    def __init__(
        self,
        peer_id: int,
        address: str,
        *,
        config: LinkConfig,
        events: EventStream,
        dials: bool,
        backoff: Backoff,
        connect_timeout: float,
        ssl_context: ssl.SSLContext | None,
        schemes: SchemeTable,
        vet: PeerVetter | None = None,
        probe_after: float | None = 0.5,
        unreachable_after: float = 10.0,
        refusals: RefusalLog | None = None,
    ) -> None:
        super().__init__(peer_id, address, config=config, dials=dials, backoff=backoff,
                         connect_timeout=connect_timeout, ssl_context=ssl_context,
                         schemes=schemes, probe_after=probe_after,
                         unreachable_after=unreachable_after, refusals=refusals)
        self._vet = vet
        self._events = events
        self._channel: LinkStream | None = None
        self._raw: DataChannel | None = None  # the current stream's channel
        self._pump: asyncio.Task[str] | None = None
        #: When the current connection became current (``time.monotonic``).
        self.up_since = 0.0
        self.epoch = 0
        #: Why the last connection ended (None before one did).
        self.last_down: str | None = None
        #: Why the last authenticated link of this peer was refused (``vet``), until one
        #: is taken; said to the peer when it probes us.
        self.refused: str | None = None

    @property
    def up(self) -> bool:
        return self._channel is not None

    # -- sending ------------------------------------------------------------------------

    def send_nowait(self, frame: bytes, held: bool = False) -> bool:
        """Queue ``frame`` on the current connection; False (and counted) when down.
        ``held``: the frame is kept until :meth:`flush` (see
        :meth:`~lazily_transports.abc.DataChannel.send_held`)."""
        channel = self._raw
        if channel is None:
            if len(frame) > self._config.max_frame_size:
                raise FrameTooLargeError(len(frame), self._config.max_frame_size)
            self.counters.frames_dropped += 1
            return False
        try:
            if held:
                channel.send_held(frame)
            else:
                channel.send_nowait(frame)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            self.counters.frames_dropped += 1
            return False
        self.counters.frames_sent += 1
        return True

    def flush(self) -> None:
        """Hand frames queued on the current connection to it now."""
        channel = self._raw
        if channel is not None:
            channel.flush()

    def send_ready(self) -> bool:
        """Whether a frame sent now would be queued (the peer is up, its buffer not full)."""
        channel = self._raw
        return channel is not None and channel.send_ready()

    async def wait_send_ready(self) -> None:
        channel = self._raw
        if channel is not None:
            await channel.wait_send_ready()

    # -- connections --------------------------------------------------------------------

    async def serve(self, channel: LinkStream) -> bool:
        """Make ``channel`` current and carry its frames until it ends or is replaced;
        False when it was refused (``vet``) or the link is closed."""
        if self._closed:
            await channel.aclose()
            return False
        epoch = channel.extra(LinkAttribute.epoch)
        refusal = None if self._vet is None else self._vet(
            channel.extra(LinkAttribute.peer_id), channel.extra(LinkAttribute.remote_features))
        if refusal is not None:
            self.counters.refused += 1
            level = logging.DEBUG if refusal == self.refused else logging.WARNING
            logger.log(level, "peer %d (epoch %d) refused after authentication: %s",
                       self.peer_id, epoch, refusal)
            self.refused = refusal
            self.trouble = f"refused after authentication: {refusal}"
            with anyio.CancelScope(shield=True):
                await channel.aclose()
            return False
        previous = self._channel
        if previous is not None:
            self._detach(previous, "replaced by a newer connection")
        self._channel, self._raw = channel, channel.channel
        self.trouble = self.refused = None
        self._said.linked()
        self.epoch, self.up_since = epoch, time.monotonic()
        self.counters.connects += 1
        if self.counters.connects > 1:
            self.counters.reconnects += 1
        logger.info("peer %d up (epoch %d) via %s", self.peer_id, epoch, self.address)
        self._events.put_control(PeerUp(self.peer_id, epoch))
        pump = asyncio.get_running_loop().create_task(
            pump_frames(channel, self._events, self.counters, self.peer_id))
        self._pump = pump
        raw = channel.channel
        if isinstance(raw, BufferedChannel):
            raw.owner_reports_breaks()  # the PeerDown below says why it ended
            raw.set_receive_hook(functools.partial(self._forward, channel, raw))
        try:
            await asyncio.wait((pump,))
        finally:
            reason = pump_outcome(pump)
            if self._channel is channel:
                self._detach(channel, reason)
            with anyio.CancelScope(shield=True):
                await channel.aclose()
        return True

    def _forward(self, stream: LinkStream, channel: BufferedChannel) -> None:
        """Frames just queued on the current connection go to the events at once; the
        pump still handles a full event queue, the end of the connection and errors."""
        if self._channel is not stream:
            return
        events = self._events
        epoch = self.epoch
        while not events.full:
            try:
                data = channel.receive_queued()
            except Exception:  # the pump meets it too, and says why
                return
            if data is None:  # none left, or the connection ended: the pump says why
                return
            self.counters.frames_received += 1
            events.put_frame_nowait(Frame(self.peer_id, epoch, data))
            if self._channel is not stream:  # what the frame caused replaced it
                return

    def drop(self, reason: str) -> None:
        """Drop the current connection (it is closed; the link connects again)."""
        channel = self._channel
        if channel is not None:
            self._detach(channel, reason)

    def _detach(self, channel: LinkStream, reason: str) -> None:
        """Stop using ``channel``: later sends are dropped, its pump is stopped."""
        self._channel = self._raw = None
        raw = channel.channel
        if isinstance(raw, BufferedChannel):
            raw.set_receive_hook(None)
        if self._pump is not None and not self._pump.done():
            self._pump.cancel()
        self._pump = None
        epoch = channel.extra(LinkAttribute.epoch)
        self.last_down, self.answered = reason, False
        logger.info("peer %d down (epoch %d): %s", self.peer_id, epoch, reason)
        self._events.put_control(PeerDown(self.peer_id, epoch, reason))

    async def aclose(self, reason: str = "peer removed") -> None:
        """Stop dialing or probing and drop the current connection."""
        self._closed = True
        tasks = [task for task in (self._dialer, self._pump) if task is not None]
        channel = self._channel
        if channel is not None:
            self._detach(channel, reason)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        if channel is not None:
            await channel.aclose()

