"""WsFrames: follows the frames in the bytes a WebSocket connection reads (RFC 6455
framing, after the HTTP upgrade's header block), to tell the size of the message still
arriving before websockets hands it over whole.

websockets buffers every frame whole before it checks it, so a frame it refuses only
once it is in (a control frame above 125 bytes, a continuation with no message under
way, reserved bits set) holds as many bytes as a data frame: every frame arriving
counts, whatever its opcode. Once websockets stops parsing (it failed the connection, or
read a close frame) it discards what comes: :meth:`WsFrames.stop` says so, and nothing
counts any more."""

from __future__ import annotations

__all__ = ["WsFrames"]

_HEADERS_END = b"\r\n\r\n"
_CONTINUATION = 0
_CONTROL = 8  # opcodes 8 and above: close, ping, pong (never fragmented, at most 125 B)


def _header_size(second: int) -> int:
    length = second & 0x7F
    extended = 2 if length == 126 else 8 if length == 127 else 0
    return 2 + extended + (4 if second & 0x80 else 0)


class WsFrames:
    """Where the incoming bytes stand: in the HTTP upgrade's headers, in a frame's
    header or in its payload. Fed every chunk read, in order, from the connection's
    first byte (a 101 response or an upgrade request has no body)."""

    __slots__ = ("_fin", "_head", "_left", "_length", "_message", "_opcode", "_size",
                 "_stopped", "_tail", "_upgrading")

    def __init__(self) -> None:
        self._upgrading = True
        self._tail = b""  # the last bytes of the headers so far (their end may straddle)
        self._head = bytearray()  # the header bytes of the frame being read
        self._left = 0  # payload bytes of that frame still to come
        self._size = 0  # that frame's size, header included
        self._length = 0  # its payload's (what websockets holds to its max_size)
        self._opcode = _CONTINUATION
        self._fin = True
        self._message = False  # a data message in fragments is under way
        self._stopped = False

    def stop(self) -> None:
        """The connection reads no more frames (what comes is discarded)."""
        self._stopped = True

    @property
    def stopped(self) -> bool:
        """Whether :meth:`stop` was called."""
        return self._stopped

    @property
    def arriving(self) -> bool:
        """Whether a frame is half-read or a message in fragments is under way (and the
        connection still reads frames)."""
        return not self._stopped and bool(self._message or self._left or self._head)

    def feed(self, data: bytes) -> bool:
        """Follow ``data``; True when what :meth:`expected` counted ended in it (a data
        message, or a frame outside one)."""
        if self._stopped:
            return False
        start = 0
        if self._upgrading:
            seen = self._tail + data
            end = seen.find(_HEADERS_END)
            if end < 0:
                self._tail = seen[-3:]
                return False
            self._upgrading, self._tail = False, b""
            start = end + len(_HEADERS_END) - (len(seen) - len(data))
        return self._frames(data, start)

    def _frames(self, data: bytes, offset: int) -> bool:
        ended = False
        end = len(data)
        head = self._head
        while offset < end:
            if self._left:
                taken = min(self._left, end - offset)
                self._left -= taken
                offset += taken
                if not self._left:
                    ended |= self._frame_done()
                continue
            if len(head) < 2:
                taken = min(2 - len(head), end - offset)
                head += data[offset:offset + taken]
                offset += taken
                if len(head) < 2:
                    break
            size = _header_size(head[1])
            if len(head) < size:
                taken = min(size - len(head), end - offset)
                head += data[offset:offset + taken]
                offset += taken
                if len(head) < size:
                    break
            ended |= self._frame_started(size)
        return ended

    def _frame_started(self, header: int) -> bool:
        head = self._head
        length = head[1] & 0x7F
        if length >= 126:
            length = int.from_bytes(head[2:header - (4 if head[1] & 0x80 else 0)], "big")
        self._fin = bool(head[0] & 0x80)
        self._opcode = head[0] & 0x0F
        head.clear()
        if self._opcode != _CONTINUATION and self._opcode < _CONTROL and not self._fin:
            self._message = True
        self._size, self._length, self._left = header + length, length, length
        return False if length else self._frame_done()

    def _frame_done(self) -> bool:
        if not self._message:
            return True  # a whole message, or a frame outside one (control, stray)
        if self._opcode >= _CONTROL or not self._fin:
            return False  # a control frame between fragments, or a fragment
        self._message = False
        return True

    def expected(self, limit: int) -> int | None:
        """The bytes of the message still arriving (a message in fragments: ``limit``,
        the largest it may grow to; else the frame arriving, header included, whatever
        its opcode), ``None`` when none is, or its size is not in yet, or its payload is
        above ``limit`` (the connection refuses it), or the connection stopped reading
        frames."""
        if self._stopped:
            return None
        if self._message:
            return limit
        if self._left:
            return self._size if self._length <= limit else None
        return None
