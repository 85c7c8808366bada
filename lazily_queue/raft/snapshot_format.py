"""The snapshot format: the bytes of a snapshot file, also sent to followers as is.

A file is a magic, the CRC-32 of the body and the body (a file without the magic is
read as a bare body, unchecked). The body holds only the state machine's snapshot
(unconsumed entries, cursors, sessions), the two log entries PySyncObj anchors the log
on, and the member ids::

    {"format": 1, "state": <state machine snapshot>, "last": [cmd, idx, term],
     "prev": [cmd, idx, term], "members": [id, ...]}

Entries come back as tuples: PySyncObj compares them with journal entries, and a list
would not compare equal and make it wipe its journal. Bodies are encoded in short
pieces (:mod:`.snapshot_pieces`) and decoded with the values profile of
:mod:`lazily_transports.safe_cbor`; :func:`decode_snapshot` refuses anything malformed
with :class:`SnapshotError`.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from typing import Any

from lazily_transports.safe_cbor import VALUES, UntrustedDataError, describe

from ..errors import DamagedData
from .snapshot_pieces import encode_pieces

FORMAT = 1
MAGIC = b"LQS\x01"
_CRC = struct.Struct("<I")


class SnapshotError(DamagedData):
    """A snapshot file or transmission is malformed."""


def _entry(value: Any, what: str) -> tuple[bytes, int, int]:
    if (
        not isinstance(value, (list, tuple))
        or len(value) != 3
        or not isinstance(value[0], bytes)
        or not isinstance(value[1], int)
        or not isinstance(value[2], int)
    ):
        raise SnapshotError(f"snapshot field {what!r} is not a log entry: {describe(value)}")
    return (value[0], value[1], value[2])


def encode_snapshot(doc: dict[str, Any], pause: Callable[[], None] | None = None) -> bytes:
    """The file form: a magic, the CRC-32 of the CBOR body, the body (tuples in the
    state stay tuples, see :mod:`.values`; the anchor entries are read back as tuples),
    encoded in short pieces (:mod:`.snapshot_pieces`, ``pause`` runs between them)."""
    anchors = {k: list(v) for k, v in doc.items() if k in ("last", "prev") and type(v) is tuple}
    pieces = encode_pieces({**doc, **anchors}, pause=pause)
    crc = 0
    for piece in pieces:  # short calls: the lock is not held for the whole body
        crc = zlib.crc32(piece, crc)
    return b"".join([MAGIC, _CRC.pack(crc & 0xFFFFFFFF), *pieces])


def decode_snapshot(data: bytes) -> dict[str, Any]:
    """Decode and validate a snapshot file's bytes (checksummed, or the older plain CBOR).

    The caller bounds the size (:attr:`.snapshot.SnapshotStore.max_bytes`); tags, map keys and
    nesting are bounded here.
    """
    if data[: len(MAGIC)] == MAGIC:
        head = len(MAGIC) + _CRC.size
        if len(data) < head:
            raise SnapshotError(f"snapshot of {len(data)} bytes is truncated inside its header")
        (crc,) = _CRC.unpack_from(data, len(MAGIC))
        data = data[head:]
        if zlib.crc32(data) & 0xFFFFFFFF != crc:
            raise SnapshotError("snapshot fails its checksum: it is corrupted")
    try:
        doc = VALUES.loads(data, max_bytes=len(data))
    except UntrustedDataError as exc:
        raise SnapshotError(f"snapshot is not valid CBOR: {exc.reason}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise SnapshotError("snapshot has an unknown format")
    if "state" not in doc:
        raise SnapshotError("snapshot holds no state")
    members = doc.get("members")
    if not isinstance(members, list) or not all(isinstance(m, str) for m in members):
        raise SnapshotError("snapshot members must be a list of node ids")
    doc["last"] = _entry(doc.get("last"), "last")
    doc["prev"] = _entry(doc.get("prev"), "prev")
    if doc["prev"][1] + 1 != doc["last"][1]:
        raise SnapshotError("snapshot anchor entries are not consecutive")
    return doc
