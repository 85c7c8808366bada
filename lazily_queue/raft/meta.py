"""The journal's metadata (term, vote, identity, floor): two checksummed copies.

Each copy is ``magic | u64 sequence | u32 crc32(sequence, body) | CBOR body`` and is replaced
atomically (file and directory fsynced). Both are replaced, one after the other,
before anything that depends on the new values leaves the member, so when one copy
is damaged the other holds either the same values or older ones that nothing was
ever sent on. Reading takes the valid copy with the higher sequence number; a file
without the magic is the single plain-CBOR copy older versions wrote.
"""

from __future__ import annotations

import logging
import struct
import zlib
from collections.abc import Callable
from typing import Any

import cbor2
from lazily_transports.safe_cbor import PROTOCOL, UntrustedDataError

from ..errors import InvalidConfiguration
from .disk import Disk
from .records import JournalError

log = logging.getLogger(__name__)

META_VERSION = 1
MAGIC = b"LQM\x01"
_HEAD = struct.Struct("<QI")
SECOND_SUFFIX = ".b"
#: Largest metadata copy read (it holds a few small fields).
META_MAX_BYTES = 64 * 1024


def default_meta() -> dict[str, Any]:
    return {"version": META_VERSION, "term": 0, "voted_for": None, "commit": 1}


def _crc(sequence: int, body: bytes) -> int:
    return zlib.crc32(body, zlib.crc32(struct.pack("<Q", sequence))) & 0xFFFFFFFF


def encode_meta(meta: dict[str, Any], sequence: int) -> bytes:
    body = cbor2.dumps(meta)
    return MAGIC + _HEAD.pack(sequence, _crc(sequence, body)) + body


class BadField(ValueError):
    """A metadata copy passed its checksum but one of its fields (``key``) holds a value
    of the wrong type."""

    def __init__(self, key: str, value: Any) -> None:
        super().__init__(f"field {key!r} holds {type(value).__name__} {value!r:.40}")
        self.key = key


class UnreadableFeatures(JournalError, InvalidConfiguration):
    """Both metadata copies are readable but for their ``features`` field (the
    handshake features of the version that last ran the node); the message names it
    and the fix that keeps the journal, term and vote."""


#: Fields a copy is still usable without (they are written again when the node starts).
RECORDED_AGAIN = ("features",)


def decode_meta(raw: bytes, *, dropping: tuple[str, ...] = ()) -> tuple[dict[str, Any], int]:
    """The metadata and its sequence number; raises ``ValueError`` when damaged
    (:class:`BadField` for a field of the wrong type, unless the field is in ``dropping``:
    then it is left out).

    The body is decoded with the protocol profile of :mod:`lazily_transports.safe_cbor`.
    """
    sequence = 0
    if len(raw) > META_MAX_BYTES:
        raise ValueError(f"{len(raw)} bytes exceed the {META_MAX_BYTES}-byte limit")
    if raw[: len(MAGIC)] == MAGIC:
        if len(raw) < len(MAGIC) + _HEAD.size:
            raise ValueError("truncated header")
        sequence, crc = _HEAD.unpack_from(raw, len(MAGIC))
        raw = raw[len(MAGIC) + _HEAD.size :]
        if _crc(sequence, raw) != crc:
            raise ValueError("checksum mismatch")
    try:
        meta = PROTOCOL.loads(raw, max_bytes=META_MAX_BYTES)
    except UntrustedDataError as exc:
        raise ValueError(f"not valid CBOR ({exc.reason})") from None
    if not isinstance(meta, dict) or meta.get("version") != META_VERSION:
        raise ValueError("unknown metadata format")
    for key, valid in _FIELDS.items():
        if key in meta and not valid(meta[key]):
            if key not in dropping:
                raise BadField(key, meta[key])
            del meta[key]
    return meta, sequence


def _count(value: Any) -> bool:
    return type(value) is int and value >= 0


#: What each field the node reads may hold (an older copy may lack any of them).
_FIELDS: dict[str, Callable[[Any], bool]] = {
    "term": _count,
    "commit": _count,
    "voted_for": lambda v: v is None or type(v) in (str, int),
    "node": lambda v: type(v) is str,
    "cluster": lambda v: type(v) is str,
    "incarnation": lambda v: type(v) is str,
    "peer_incarnations": lambda v: type(v) is dict and all(
        type(k) is str and type(i) is str for k, i in v.items()),
    "retired_incarnations": lambda v: type(v) is dict and all(
        type(k) is str and type(ids) is list and all(type(i) is str for i in ids)
        for k, ids in v.items()),
    "features": lambda v: type(v) is list and all(type(f) is str for f in v),
    "rejoin_floor": lambda v: v is None or (
        type(v) is list and len(v) == 2 and all(_count(x) for x in v)),
}


class MetaStore:
    """Reads and replaces the two copies of one journal's metadata."""

    def __init__(self, disk: Disk, path: str) -> None:
        self._disk = disk
        self.path = path
        self.paths = (path, path + SECOND_SUFFIX)
        self.sequence = 0
        #: What was wrong with a copy on reading (damaged or missing); the next
        #: :meth:`store` repairs it.
        self.repaired: list[str] = []
        #: A copy failed its checks on reading.
        self.damaged = False
        #: The copy the last :meth:`load` read (None: there was none, defaults).
        self.read_from: str | None = None

    def load(self, *, dropping: tuple[str, ...] = ()) -> dict[str, Any]:
        """The newest valid copy (defaults when there is none at all); a field in
        ``dropping`` of the wrong type is left out rather than refused."""
        found: list[tuple[int, str, dict[str, Any]]] = []
        problems: list[str] = []
        fields: set[str | None] = set()
        present = 0
        for path in self.paths:
            raw = self._disk.read(path)
            if raw is None:
                continue
            present += 1
            try:
                meta, sequence = decode_meta(raw, dropping=dropping)
            except ValueError as exc:
                problems.append(f"{path}: {exc}")
                fields.add(exc.key if isinstance(exc, BadField) else None)
                continue
            found.append((sequence, path, meta))
        if not found:
            if present and fields & set(RECORDED_AGAIN):
                self._refuse_fields(sorted(f for f in fields if f is not None), problems)
            if present:
                raise JournalError(
                    f"{self.path}: both copies of the node's metadata (term and vote) are "
                    f"damaged ({'; '.join(problems)}); the node cannot know whom it voted "
                    "for. Stop it and run `lazily-queue rejoin --config FILE`."
                )
            return default_meta()
        self.sequence, self.read_from, meta = max(found, key=lambda item: item[0])
        if problems:
            self.repaired = problems
            self.damaged = True
            log.warning("%s: a metadata copy is damaged (%s); using the other one (sequence "
                        "%d)", self.path, "; ".join(problems), self.sequence)
        elif present == 1 and self.sequence > 0:
            self.repaired = [f"{self.paths[1]}: missing"]
        return dict(meta)

    def _refuse_fields(self, fields: list[str], problems: list[str]) -> None:
        """Raise :class:`UnreadableFeatures` when a copy is usable but for ``fields``
        (its term and vote readable); return when none is."""
        try:
            meta = self.load(dropping=tuple(f for f in fields if f in RECORDED_AGAIN))
        except JournalError:
            return
        raise UnreadableFeatures(
            f"{self.path}: both copies of the node's metadata hold an unreadable "
            f"{', '.join(repr(f) for f in fields)} field ({'; '.join(problems)}): the "
            "handshake features of the lazily-queue version that last ran this node, "
            f"which it records again when it starts. Its term ({meta.get('term', 0)}) and "
            "vote are readable, and its journal is not touched: no `rejoin` wipe is needed. "
            "With the newest lazily-queue version that ran this node, run `lazily-queue "
            "rejoin --config FILE --reset-features` (it drops only that field), then start "
            "the node again.")

    def store(self, meta: dict[str, Any]) -> None:
        """Replace both copies (raises ``OSError``; a copy is never half written)."""
        self.sequence += 1
        raw = encode_meta(meta, self.sequence)
        for path in self.paths:
            self._disk.replace(path, raw)
        self.repaired = []
