"""Length-prefixed framing for stream sockets: 4-byte big-endian size, then the payload."""

from __future__ import annotations

import struct

from ..errors import FrameTooLargeError

__all__ = ["HEADER_SIZE", "FrameDecoder", "encode_frame", "frame_header"]

HEADER_SIZE = 4
_LENGTH = struct.Struct(">I")
frame_header = _LENGTH.pack


def encode_frame(payload: bytes) -> bytes:
    """One frame on the wire (the encoder never sees a payload above 2**32 - 1 bytes)."""
    return _LENGTH.pack(len(payload)) + payload


class FrameDecoder:
    """Incremental decoder: feed arbitrary chunks, get whole frames in order.

    A declared length above ``max_frame_size`` raises ``FrameTooLargeError`` as soon as
    the 4 header bytes are in, before any payload is buffered. ``pending`` is the number
    of bytes of an unfinished frame (non-zero at end of stream means truncation).
    """

    __slots__ = ("_buffer", "max_frame_size", "payload_bytes")

    def __init__(self, max_frame_size: int) -> None:
        self.max_frame_size = max_frame_size
        self._buffer = bytearray()
        #: Total payload bytes returned by the last ``feed``.
        self.payload_bytes = 0

    @property
    def pending(self) -> int:
        return len(self._buffer)

    def expected(self) -> int | None:
        """The full size (header included) of the frame being assembled, if known."""
        if len(self._buffer) < HEADER_SIZE:
            return None
        return HEADER_SIZE + int(_LENGTH.unpack_from(self._buffer, 0)[0])

    def feed(self, data: bytes) -> list[bytes]:
        buffer = self._buffer
        if buffer:
            buffer += data
            return self._drain_buffer()
        frames: list[bytes] = []
        offset = 0
        end = len(data)
        limit = self.max_frame_size
        total = 0
        unpack = _LENGTH.unpack_from
        while end - offset >= HEADER_SIZE:
            (size,) = unpack(data, offset)
            if size > limit:
                raise FrameTooLargeError(size, limit)
            stop = offset + HEADER_SIZE + size
            if stop > end:
                break
            frames.append(data[offset + HEADER_SIZE : stop])
            total += size
            offset = stop
        if offset < end:
            buffer += memoryview(data)[offset:]
        self.payload_bytes = total
        return frames

    def _drain_buffer(self) -> list[bytes]:
        buffer = self._buffer
        frames: list[bytes] = []
        offset = 0
        end = len(buffer)
        limit = self.max_frame_size
        total = 0
        with memoryview(buffer) as view:
            while end - offset >= HEADER_SIZE:
                (size,) = _LENGTH.unpack_from(view, offset)
                if size > limit:
                    raise FrameTooLargeError(size, limit)
                stop = offset + HEADER_SIZE + size
                if stop > end:
                    break
                frames.append(bytes(view[offset + HEADER_SIZE : stop]))
                total += size
                offset = stop
        if offset:
            del buffer[:offset]
        self.payload_bytes = total
        return frames
