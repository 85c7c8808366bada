"""How a replicated command sits in a log entry: one type byte, the leader's stamp, the batch.

PySyncObj's own entries pickle the applied method's id and arguments, so a batch was
encoded to CBOR, pickled, unpickled and pickled again by the leader to stamp it. Ours
carry the CBOR batch as it is, encoded once::

    u8 COMMAND | u64 stamp (leader's wall clock, ms; 0 until the leader stamps it) | batch

The leader stamps a proposal by rewriting the eight stamp bytes as it appends it.
"""

from __future__ import annotations

import struct

#: The entry type byte: PySyncObj uses 0 (regular), 1 (no-op), 2 (membership), 3 (version).
COMMAND = 5
_HEAD = struct.Struct(">BQ")
HEAD_SIZE = _HEAD.size
_COMMAND_BYTE = bytes([COMMAND])


def encode(batch: bytes, stamp: int = 0) -> bytes:
    """An entry carrying ``batch``, stamped ``stamp`` (0: not stamped yet)."""
    return _HEAD.pack(COMMAND, stamp) + batch


def is_command(entry: bytes) -> bool:
    return entry[:1] == _COMMAND_BYTE and len(entry) >= HEAD_SIZE


def stamped(entry: bytes, stamp: int) -> bytes:
    """The same entry with the leader's stamp."""
    return _HEAD.pack(COMMAND, stamp) + entry[HEAD_SIZE:]


def command_of(entry: bytes) -> tuple[int, bytes] | None:
    """The stamp and the batch of a command entry; ``None`` for any other entry."""
    if entry[:1] != _COMMAND_BYTE or len(entry) < HEAD_SIZE:
        return None
    _, stamp = _HEAD.unpack_from(entry)
    return int(stamp), entry[HEAD_SIZE:]


def decode(entry: bytes) -> tuple[int, bytes]:
    """The stamp and the batch of a command entry (see :func:`is_command`)."""
    _, stamp = _HEAD.unpack_from(entry)
    return int(stamp), entry[HEAD_SIZE:]
