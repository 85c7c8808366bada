"""How a WebSocket channel reads: its connection classes follow the frames they read
(:mod:`._ws_frames`) and report each chunk, and :class:`WsReading` pauses and resumes
reading for the three that may hold it off (the channel's queue, websockets' own queue
of messages, a frame budget)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable
from typing import Any

from websockets.asyncio.client import ClientConnection

from ..frame_budget import FrameBudget
from ._gated import GatedConnection
from ._reads import read_buffer
from ._reservation import FrameReservation
from ._ws_frames import WsFrames

__all__ = ["Counting", "CountingClientConnection", "WsReading", "counting"]


def _parsing(protocol: Any) -> bool:
    """Whether websockets' ``protocol`` still parses the frames it reads: not once it
    read a close frame or refused a frame (it discards the rest), nor once a close frame
    was sent, which failing the connection for any cause does (a message refused when
    taken: invalid UTF-8, too many fragments; a keepalive timeout): the link is ending."""
    return (getattr(protocol, "parser_exc", None) is None
            and getattr(protocol, "close_rcvd", None) is None
            and getattr(protocol, "close_sent", None) is None)


class Counting(asyncio.Protocol):
    """A websockets connection following the frames it reads (``frames``) and telling
    ``chunk_read`` (set by its channel) of each chunk, after its frame parser took it,
    and whether what the parser counted ended in it (:meth:`WsFrames.feed`; True too
    when websockets stopped parsing frames in it): methods of the class, so an event
    loop keeping the protocol's bound methods (uvloop) calls them too. Once websockets
    stops parsing outside a read (it failed the connection when a message was taken),
    ``chunk_read`` hears it at once, with no bytes and True. The classes made with it
    end their bases with :class:`asyncio.BufferedProtocol` (after websockets', whose
    methods it must not hide), so they read into their thread's shared buffer
    (:mod:`._reads`)."""

    chunk_read: Callable[[bytes, bool], None] | None = None
    frames: WsFrames | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.frames = WsFrames()
        super().connection_made(transport)

    def get_buffer(self, sizehint: int) -> memoryview:
        return read_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        self.data_received(bytes(read_buffer()[:nbytes]))

    def data_received(self, data: bytes) -> None:
        frames = self.frames
        ended = frames.feed(data) if frames is not None else False
        super().data_received(data)
        if self._stopped_parsing():
            ended = True
        if self.chunk_read is not None:
            self.chunk_read(data, ended)

    def send_data(self) -> None:
        """Write what websockets has to send (after every change of its protocol's
        state, a failure of the connection included)."""
        super().send_data()  # type: ignore[misc]
        if self._stopped_parsing() and self.chunk_read is not None:
            self.chunk_read(b"", True)

    def _stopped_parsing(self) -> bool:
        """Whether websockets stopped parsing frames since the last look (its frames
        are followed no more)."""
        frames = self.frames
        if frames is None or frames.stopped or _parsing(getattr(self, "protocol", None)):
            return False
        frames.stop()
        return True


class CountingClientConnection(Counting, ClientConnection, asyncio.BufferedProtocol):
    """A client connection whose channel counts the bytes of frames still arriving."""


def counting(connection: type[GatedConnection]) -> type[GatedConnection]:
    """``connection`` (a server connection class) counting as :class:`Counting` does."""
    return type(connection.__name__, (Counting, connection, asyncio.BufferedProtocol), {})


class WsReading:
    """Reading of one websockets ``connection``: paused while ``channel_full()`` (the
    channel's queue is full), websockets' queue of messages is above its mark, or the
    message arriving waits for room in the frame budget given :meth:`use_budget`;
    ``closed()`` lifts every hold (the closing handshake is read)."""

    __slots__ = ("_budget_paused", "_channel_full", "_closed", "_connection", "_max_size",
                 "_paused", "_queue_full", "reservation")

    def __init__(self, connection: Any, channel_full: Callable[[], bool],
                 closed: Callable[[], bool], max_size: Callable[[], int]) -> None:
        self._connection = connection
        self._channel_full = channel_full
        self._closed = closed
        self._max_size = max_size
        self._budget_paused = False
        self.reservation: FrameReservation | None = None
        messages = getattr(connection, "recv_messages", None)
        self._queue_full = self._paused = bool(getattr(messages, "paused", False))
        if messages is not None and hasattr(messages, "pause"):
            messages.pause, messages.resume = self._queue_paused, self._queue_resumed

    def _queue_paused(self) -> None:
        self._queue_full = True
        self.sync()

    def _queue_resumed(self) -> None:
        self._queue_full = False
        self.sync()

    def sync(self) -> None:
        """Pause or resume reading as the holds say now."""
        held = not self._closed() and (self._channel_full() or self._queue_full
                                       or self._budget_paused)
        transport = self._connection.transport
        if held == self._paused or transport is None or transport.is_closing():
            return
        self._paused = held
        if held:
            transport.pause_reading()
        else:
            transport.resume_reading()

    @property
    def waiting_since(self) -> float | None:
        """Loop time since which the message arriving waits for budget room."""
        return None if self.reservation is None else self.reservation.since

    def use_budget(self, budget: FrameBudget, owner: Hashable) -> bool:
        """Count the messages arriving in ``budget`` as ``owner``'s (False: this
        connection does not follow its frames)."""
        if not isinstance(self._connection, Counting) or self._connection.frames is None:
            return False
        self.reservation = FrameReservation(budget, self._granted, owner)
        self.chunk_done(False)
        return True

    def chunk_done(self, ended: bool) -> None:
        """After a chunk was read (``ended``: what was reserved ended in it): reserve the
        message left arriving, or wait for room, reading nothing more."""
        reservation, frames = self.reservation, getattr(self._connection, "frames", None)
        if reservation is None or frames is None or self._closed():
            return
        if reservation.update(ended, frames.expected(self._max_size())):
            self._budget_paused = True
            self.sync()

    def _granted(self) -> None:
        self._budget_paused = False
        self.sync()

    def drop(self) -> None:
        """Give back the budget's room (the connection ends)."""
        if self.reservation is not None:
            self.reservation.drop()
