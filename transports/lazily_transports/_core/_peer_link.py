"""One peer's link inside a Mesh: the current connection, its epoch and counters."""

from __future__ import annotations

import asyncio
import functools
import logging
import socket
import ssl
import time
from typing import Any

import anyio

from ..abc import DataChannel, LinkAttribute
from ..config import LinkConfig
from ..errors import (
    FrameTooLargeError,
    HandshakeError,
    HandshakeTimeoutError,
    LookupTimeoutError,
    PeerRejectedError,
)
from ..events import EventStream, Frame, PeerCounters, PeerDown, PeerUp
from ..schemes import SchemeTable, dial, probe
from ..streams import LinkStream
from ._authentication import PeerVetter
from ._backoff import Backoff
from ._buffered import BufferedChannel
from ._probe_notes import SHUTTING_DOWN, read_answer, refusal_note
from ._pump import pump_frames, pump_outcome
from ._refusal_log import RefusalLog

__all__ = ["PeerLink"]

logger = logging.getLogger("lazily_transports.mesh")

#: Longest wait between two probes of a peer that should dial us but does not.
PROBE_MAX_INTERVAL = 10.0


class PeerLink:
    """Carries frames to and from one peer over a sequence of connections (epochs).

    Only one connection is current; when it ends (or a newer one replaces it) its
    queued frames are discarded and a ``PeerDown`` is emitted before the next
    ``PeerUp``, so no frame of an older epoch follows a newer one. Frames go through
    the current stream's raw channel: the wrapper costs nothing per frame here.

    A link that waits to be dialed probes the peer (``lazily_transports.probe``) once it has
    been down ``probe_after`` seconds, then with backoff up to ``PROBE_MAX_INTERVAL``
    while it stays down, so that a peer refusing this node says why. ``trouble`` is
    the last dial failure or probe outcome while the link is down (None once up), a
    link dropped mid-handshake leaving the reason before it standing; ``trouble_since``
    when it came to say what it says (``time.time()``; None with it).
    A peer never reached since ``start`` is logged once at WARNING after
    ``unreachable_after`` seconds (before, a peer starting later is routine).
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
        self.peer_id = peer_id
        self._said = RefusalLog() if refusals is None else refusals
        self._schemes = schemes
        self._vet = vet
        self.address = address
        self.dials = dials
        self.counters = PeerCounters()
        self._config = config
        self._events = events
        self._backoff = backoff
        self._connect_timeout = connect_timeout
        self._ssl_context = ssl_context
        self._channel: LinkStream | None = None
        self._raw: DataChannel | None = None  # the current stream's channel
        self._pump: asyncio.Task[str] | None = None
        self._dialer: asyncio.Task[None] | None = None
        self._probe_after = probe_after
        self._unreachable_after = unreachable_after
        self._started_at = 0.0
        self._said_unreachable = False
        #: The peer answered a dial or probe (refusing it, say) since the last connection
        #: ended (or since the start): it is not unreachable, it runs.
        self.answered = False
        #: When the current connection became current, and when the last failed dial
        #: began (``time.monotonic``).
        self.up_since = self.failed_at = 0.0
        self._closed = False
        self.epoch = 0
        self._trouble: str | None = None
        #: The address :attr:`trouble` was met at.
        self._trouble_at = address
        #: Dials or probes of :attr:`address` that ended without a link since it was set.
        self.failed_here = 0
        self.trouble_since: float | None = None
        #: Why the last connection ended (None before one did).
        self.last_down: str | None = None
        #: Why the last authenticated link of this peer was refused (``vet``), until one
        #: is taken; said to the peer when it probes us.
        self.refused: str | None = None

    @property
    def up(self) -> bool:
        return self._channel is not None

    @property
    def trouble(self) -> str | None:
        return self._trouble

    @trouble.setter
    def trouble(self, outcome: str | None) -> None:
        self._trouble_at = self.address
        if outcome != self._trouble:
            self._trouble = outcome
            self.trouble_since = None if outcome is None else time.time()

    def readdress(self, address: str) -> None:
        """Dial (or probe) ``address`` from the next attempt on."""
        self.address, self.failed_here = address, 0

    def _missed(self, address: str) -> None:
        """A dial or probe of ``address`` ended without a link."""
        if address == self.address:
            self.failed_here += 1

    @property
    def dial_failure(self) -> str | None:
        """:attr:`trouble` when it was met at the address tried now (``None`` once the
        link is moved to another address, until something is met there)."""
        return self._trouble if self._trouble_at == self.address else None

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

    def start(self) -> None:
        if self._dialer is not None:
            return
        self._started_at = time.monotonic()
        if self.dials:
            work, name = self._dial_forever(), f"transports-dial-{self.peer_id}"
        elif self._probe_after is not None:
            work, name = self._probe_forever(self._probe_after), f"transports-probe-{self.peer_id}"
        else:
            return
        self._dialer = asyncio.get_running_loop().create_task(work, name=name)

    async def _dial_forever(self) -> None:
        while not self._closed:
            attempted, address = time.monotonic(), self.address
            try:
                channel = await dial(
                    address, self._config, **self._reach(),
                    on_failure=lambda channel, error: None,  # said below, naming the peer
                )
            except Exception as exc:  # every failure to connect is retried after a backoff
                self._missed(address)
                self.counters.connect_failures += 1
                # When it began: a dial begun before the peer listened could not reach
                # it, however late its failure is handled (a loop busy at start-up).
                self.failed_at = attempted
                self.note_trouble(str(exc), transient=isinstance(exc, HandshakeError)
                                  and exc.field == "handshake")
                # A refused TLS handshake is a configuration problem, not routine.
                routine = isinstance(exc, OSError | TimeoutError) and not isinstance(
                    exc, ssl.SSLError)
                if routine and not isinstance(exc, HandshakeError):
                    self._routine_failure("dialing", exc)
                else:  # said once a reason, until a link is established
                    if SHUTTING_DOWN not in str(exc):  # a closing member answers nothing
                        self.answered = True
                    logger.log(self._said.level(str(exc)), "dialing peer %d at %s failed: %s",
                               self.peer_id, self.address, exc)
                await anyio.sleep(self._backoff.next())
                continue
            if await self.serve(channel):
                self._backoff.reset()  # it carried frames: a lost link is dialed at once
            else:
                self._missed(address)
            await anyio.sleep(self._backoff.next())

    def _reach(self) -> dict[str, Any]:
        """The options of a dial or a probe of this peer."""
        return {"timeout": self._connect_timeout, "ssl_context": self._ssl_context,
                "expect_peer_id": self.peer_id, "schemes": self._schemes}

    async def _probe_forever(self, delay: float) -> None:
        backoff = Backoff(delay, max(delay, PROBE_MAX_INTERVAL), jitter=0.2)
        while not self._closed:
            await anyio.sleep(backoff.next())
            if self._channel is None:
                await self._probe_once()
            else:
                backoff.reset()

    def _routine_failure(self, doing: str, error: object) -> None:
        """Log a peer found unreachable: at DEBUG, except once at WARNING, with what to
        check, when it was never reached (linked, or answering a dial or probe with a
        refusal, which was said) ``unreachable_after`` seconds after ``start`` (when the
        mesh started, or the peer was added to a running one)."""
        waited = time.monotonic() - self._started_at
        if (self.counters.connects or self.answered or self._said_unreachable
                or waited < self._unreachable_after):
            logger.debug("%s peer %d at %s failed: %s", doing, self.peer_id, self.address,
                         error)
            return
        self._said_unreachable = True
        check = ("its host name and the resolver (DNS server) of this host, which did not "
                 "answer its lookup (this node keeps trying it)"
                 if isinstance(error, LookupTimeoutError)
                 else "that its host name resolves here (this node keeps trying it)"
                 if isinstance(error, socket.gaierror)
                 else "that it runs and listens at this address")
        logger.warning("%s peer %d at %s failed: %s; not reached in %.0fs since this node "
                       "began trying it: check %s", doing, self.peer_id, self.address, error,
                       waited, check)

    def note_trouble(self, outcome: str, *, transient: bool = False) -> None:
        """``outcome`` is why the link is down now; a ``transient`` one (the link dropped
        mid-handshake) leaves the reason standing, such as the peer's refusal, which
        a peer refusing this node often ends its next handshakes with."""
        if not transient or self.trouble is None:
            self.trouble = outcome

    async def _probe_once(self) -> None:
        level = logging.WARNING
        transient = False
        sent_at, address = time.monotonic(), self.address
        try:
            note = await probe(address, self._config, **self._reach())
        except HandshakeError as exc:
            if not isinstance(exc, HandshakeTimeoutError) and SHUTTING_DOWN not in str(exc):
                self.answered = True
            outcome = str(exc)
            transient = exc.field == "handshake"
            if isinstance(exc, HandshakeTimeoutError) or transient:
                level = logging.DEBUG  # transient: the peer is busy or restarting
            detail: object = exc
        except ssl.SSLError as exc:
            outcome, detail = f"TLS failed: {exc}", exc
        except (OSError, TimeoutError) as exc:
            if self._channel is None and not self._closed:
                self._routine_failure("probing", exc)
            outcome, level, detail = f"unreachable: {exc}", logging.DEBUG, exc
        except Exception as exc:  # a probe is advisory: report anything and go on
            outcome, detail = f"probe failed: {exc!r}", exc
        else:
            self.answered = True
            if note and note.startswith(refusal_note(self.peer_id, self._config.peer_id)):
                # It dials us and refuses what it reaches after authentication (say, an
                # impostor of this id): a configuration problem, said as a refusal.
                outcome = note
                level, detail = logging.WARNING, PeerRejectedError("peer", note)
            else:
                reading = read_answer(self.peer_id, note, sent_at - self._started_at)
                outcome, level, detail = reading.outcome, reading.level, reading.outcome
        if self._channel is not None or self._closed:
            return
        self._missed(address)
        if outcome == self.trouble:
            level = logging.DEBUG  # logged once per change
        self.note_trouble(outcome, transient=transient)
        if level > logging.DEBUG or not outcome.startswith("unreachable"):
            logger.log(level, "probing peer %d at %s: %s", self.peer_id, self.address, detail)

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

