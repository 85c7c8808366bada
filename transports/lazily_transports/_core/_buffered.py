"""A DataChannel base with a bounded receive queue and cross-thread wake-ups.

Transports push incoming frames with ``_deliver`` and report the end of the link with
``_deliver_eof`` or ``_fail``; readers drain the queue without a task switch per frame.
Subclasses implement the send side (``_send_frame_nowait``, ``_writable``) and the
``_pause_reading`` / ``_resume_reading`` / ``_abort`` hooks.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
from collections import deque
from collections.abc import Callable

import anyio

from ..abc import DataChannel
from ..errors import LinkBrokenError
from ._handshake import HANDSHAKE_FRAME_LIMIT

__all__ = ["BufferedChannel", "Signal"]

logger = logging.getLogger("lazily_transports.channel")
#: anyio loads its names, and its asyncio backend, on first use: what a closing link
#: needs (a shielded cancel scope) is loaded with the channels, not by the first link
#: closing, which at the process's open-file limit could not read the modules' files
#: (EMFILE) and would fail.
_SHIELD = anyio.CancelScope
with contextlib.suppress(ImportError):
    importlib.import_module("anyio._backends._asyncio")


class Signal:
    """A one-shot wake-up for one task, fireable from any thread."""

    __slots__ = ("_future", "_loop", "fired")

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._future: asyncio.Future[None] = self._loop.create_future()
        self.fired = False

    def fire(self) -> None:
        if self.fired:
            return
        self.fired = True
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            self._set()
        else:
            try:
                self._loop.call_soon_threadsafe(self._set)
            except RuntimeError:  # the waiting loop is already closed
                pass

    def _set(self) -> None:
        if not self._future.done():
            self._future.set_result(None)

    async def wait(self) -> None:
        await self._future


def _fire_all(waiters: list[Signal]) -> None:
    for waiter in waiters:
        waiter.fire()


class BufferedChannel(DataChannel):
    """DataChannel whose incoming frames sit in a bounded in-memory queue.

    Reading pauses (``_pause_reading``) once ``receive_buffer_size`` bytes are queued
    (at most ``HANDSHAKE_FRAME_LIMIT`` until ``open_limits``) and resumes when half of
    them were consumed. A single receiving task may run in a
    different thread from the producer; several receiving tasks must share one loop.
    """

    def __init__(
        self,
        *,
        receive_buffer_size: int,
        send_buffer_size: int,
        remote_address: str = "",
        source: str = "",
    ) -> None:
        super().__init__(remote_address=remote_address, source=source)
        self._rx: deque[bytes] = deque()
        self._rx_added = 0  # bytes queued so far, written by the producer only
        self._rx_taken = 0  # bytes consumed so far, written by the consumer only
        self._rx_limit = min(receive_buffer_size, HANDSHAKE_FRAME_LIMIT)
        self._rx_paused = False
        self._rx_waiters: list[Signal] = []
        self._tx_waiters: list[Signal] = []
        self._end_waiters: list[Signal] = []
        self._send_buffer_size = send_buffer_size
        self._eof = False
        self._eof_sent = False
        self._send_dead: str | None = None
        self._broken = False
        self._closed = False
        self._reason: str | None = None
        self._rx_hook: Callable[[], None] | None = None
        self._established = False
        self._break_level = logging.WARNING
        self._violated = False

    def open_limits(self, max_frame_size: int, receive_buffer_size: int) -> None:
        super().open_limits(max_frame_size, receive_buffer_size)
        self._rx_limit = receive_buffer_size
        if self._rx_paused and self._rx_added - self._rx_taken <= self._rx_limit >> 1:
            self._rx_paused = False
            self._resume_reading()

    def handshake_done(self) -> None:
        self._established = True

    def owner_reports_breaks(self) -> None:
        """See :meth:`DataChannel.owner_reports_breaks` (a mesh says it in its
        ``PeerDown`` event and its peer-down line naming the peer)."""
        self._break_level = logging.DEBUG

    @property
    def peer_broke_protocol(self) -> bool:
        return self._violated

    def set_receive_hook(self, hook: Callable[[], None] | None) -> bool:
        """See :meth:`DataChannel.set_receive_hook`: a channel whose frames may be queued
        from another thread does not call it."""
        return False

    # -- hooks --------------------------------------------------------------------------

    def _pause_reading(self) -> None:
        """Stop taking data from the peer until ``_resume_reading``."""

    def _resume_reading(self) -> None:
        """Take data from the peer again."""

    def _abort(self) -> None:
        """Tear down the underlying connection immediately."""

    def _writable(self) -> bool:
        """Whether ``_send_frame_nowait`` would accept a frame (or raise closed/broken)."""
        return True

    # -- producer side ------------------------------------------------------------------

    def _deliver(self, frame: bytes) -> None:
        """Queue one incoming frame for the reader."""
        self._rx.append(frame)
        self._rx_added += len(frame)
        if self._rx_waiters:
            self._wake_receivers()
        if not self._rx_paused and self._rx_added - self._rx_taken >= self._rx_limit:
            self._rx_paused = True
            self._pause_reading()

    def _deliver_eof(self) -> None:
        """The peer finished sending; readers get EndOfStream after the queue."""
        if not (self._broken or self._closed):
            self._eof = True
        self._wake_receivers()
        self._wake_enders()

    def _fail(self, reason: str, *, violation: bool = False) -> None:
        """The link failed (``violation``: the peer broke the link's protocol); log why,
        abort it and wake everyone. Until the handshake is done the line is at DEBUG:
        the handshake's refusal, logged at a bounded rate, names the reason and the peer,
        and a stranger's connections must not fill the log; so is it once
        :meth:`owner_reports_breaks` was called."""
        if self._broken or self._closed:
            return
        self._violated = violation
        self._abort()
        if self._eof:  # the peer already finished sending: only our direction is lost
            self._send_dead = reason
            self._wake_senders()
            return
        self._broken = True
        self._reason = reason
        level = self._break_level if self._established else logging.DEBUG
        logger.log(level, "link %s closed: %s", self.remote_address, reason)
        self._wake_all()

    def _connection_gone(self) -> None:
        """The connection closed without an error; frames already queued stay readable."""
        if self._send_dead is None:
            self._send_dead = "connection closed"
        if not (self._broken or self._closed or self._eof):
            self._eof = True
        self._wake_all()

    def _mark_closed(self) -> bool:
        """Record a local close; returns False when the channel was already closed."""
        if self._closed:
            return False
        self._closed = True
        if not self._broken:
            self._reason = "closed locally"
        self._rx.clear()
        self._wake_all()
        return True

    def _wake_receivers(self) -> None:
        waiters, self._rx_waiters = self._rx_waiters, []
        _fire_all(waiters)

    def _wake_senders(self) -> None:
        waiters, self._tx_waiters = self._tx_waiters, []
        _fire_all(waiters)

    def _wake_enders(self) -> None:
        waiters, self._end_waiters = self._end_waiters, []
        _fire_all(waiters)

    def _wake_all(self) -> None:
        self._wake_receivers()
        self._wake_senders()
        self._wake_enders()

    # -- consumer side ------------------------------------------------------------------

    @property
    def close_reason(self) -> str | None:
        if self._reason is None and self._eof:
            return "closed by peer"
        return self._reason

    @property
    def ended(self) -> bool:
        """True once the link is closed or broken (or the peer finished sending)."""
        return self._reason is not None or self._eof

    def receive_nowait(self) -> bytes:
        rx = self._rx
        if rx:
            frame = rx.popleft()
            self._rx_taken += len(frame)
            if self._rx_paused and self._rx_added - self._rx_taken <= self._rx_limit >> 1:
                self._rx_paused = False
                self._resume_reading()
            return frame
        raise self._receive_error()

    def receive_queued(self) -> bytes | None:
        """:meth:`receive_nowait` without an exception: ``None`` when no frame is queued
        (also once the channel ended: :meth:`receive_nowait` says how)."""
        rx = self._rx
        if not rx:
            return None
        frame = rx.popleft()
        self._rx_taken += len(frame)
        if self._rx_paused and self._rx_added - self._rx_taken <= self._rx_limit >> 1:
            self._rx_paused = False
            self._resume_reading()
        return frame

    def _receive_error(self) -> Exception:
        if self._closed:
            return anyio.ClosedResourceError()
        if self._broken:
            return LinkBrokenError(self._reason or "link failed")
        if self._eof:
            return anyio.EndOfStream()
        return anyio.WouldBlock()

    def _send_error(self) -> Exception | None:
        """The exception a send must raise now, or None when the link can carry frames."""
        if self._closed:
            return anyio.ClosedResourceError()
        if self._broken:
            return LinkBrokenError(self._reason or "link failed")
        if self._eof_sent:
            return anyio.ClosedResourceError()
        if self._send_dead is not None:
            return LinkBrokenError(self._send_dead)
        return None

    async def wait_receive_ready(self) -> None:
        if self._rx or self._reason is not None or self._eof:
            return
        waiter = Signal()
        self._rx_waiters.append(waiter)
        if self._rx or self._reason is not None or self._eof:
            return
        await waiter.wait()

    async def wait_ended(self) -> None:
        if self.ended:
            return
        waiter = Signal()
        self._end_waiters.append(waiter)
        if self.ended:
            return
        try:
            await waiter.wait()
        finally:  # a wait given up (its race lost) leaves no waiter behind
            if not waiter.fired:
                self._end_waiters.remove(waiter)

    def send_ready(self) -> bool:
        return self._send_error() is not None or self._writable()

    async def wait_send_ready(self) -> None:
        if self._send_error() is not None or self._writable():
            return
        waiter = Signal()
        self._tx_waiters.append(waiter)
        if self._send_error() is not None or self._writable():
            return
        await waiter.wait()
