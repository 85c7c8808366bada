"""A large value in CBOR as many small encodings, so that encoding it on a worker thread
does not hold the interpreter lock for long.

:func:`encode_pieces` gives the bytes :func:`values.dumps` gives for the same value
(tuples tagged, maps in insertion order, definite lengths), but never encodes more than
about :data:`PIECE_ITEMS` nested items in one C call: a list, tuple or map holding
more is written as its CBOR head followed by runs of its items (each run encoded as a
short list or map whose own head is dropped), and an item too large for a run is split
the same way. Between two runs the encoder calls ``pause`` when given: on a worker
thread, :class:`~.snapshot_writer.LockYield` hands the interpreter lock to the event
loop there (left to itself, the interpreter takes it back only every switch interval,
5 ms by default, so every loop turn would wait that long while a snapshot encodes).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import cbor2
from lazily_transports.safe_cbor import TUPLE_TAG

from . import values

#: Most nested items (elements, keys and values, at any depth) encoded in one call.
PIECE_ITEMS = 512


class Later:
    """A list in a captured state made where it is encoded (the writer's thread), item
    by item: ``convert`` turns each of ``items`` (copied when the state was captured:
    a list, or a sequence that reads only such copies) into its plain value there,
    reading only that item and values never changed in place. Each value lives only
    while its run is encoded."""

    __slots__ = ("convert", "items")

    def __init__(self, items: Sequence[Any], convert: Callable[[Any], Any]) -> None:
        self.items = items
        self.convert = convert


_CONTAINERS = (list, dict, tuple)
_NESTED = (list, dict, tuple, Later)
_ARRAY, _MAP, _TAG = 4, 5, 6


def head(major: int, n: int) -> bytes:
    """The CBOR head of major type ``major`` with argument ``n`` (shortest form)."""
    top = major << 5
    if n < 24:
        return bytes((top | n,))
    if n < 0x100:
        return bytes((top | 24, n))
    if n < 0x10000:
        return bytes((top | 25,)) + n.to_bytes(2, "big")
    if n < 0x100000000:
        return bytes((top | 26,)) + n.to_bytes(4, "big")
    return bytes((top | 27,)) + n.to_bytes(8, "big")


def _weight(value: Any, cap: int) -> int:
    """Nested items in ``value`` (keys count in maps), counted up to just over ``cap``."""
    if type(value) not in _NESTED:
        return 0
    total = 0
    level = [value]
    while level:
        below: list[Any] = []
        for item in level:
            kind = type(item)
            if kind is dict:
                total += 2 * len(item)
                if total > cap:  # before looking inside: a large container costs nothing
                    return total
                below.extend(v for v in item.values() if type(v) in _NESTED)
            elif kind is list or kind is tuple:
                total += len(item)
                if total > cap:
                    return total
                below.extend(v for v in item if type(v) in _NESTED)
            elif kind is Later:  # never encoded in one call with what holds it
                return cap + 1
        level = below
    return total


def encode_pieces(value: Any, out: list[bytes] | None = None,
                  pause: Callable[[], None] | None = None) -> list[bytes]:
    """``value`` encoded as :func:`values.dumps` would, as a list of short byte strings
    to join (appended to ``out`` when given); ``pause`` runs after each run of items."""
    if out is None:
        out = []
    kind = type(value)
    if kind is Later:
        out.append(head(_ARRAY, len(value.items)))
        _runs(value.items, out, pause, as_map=False, convert=value.convert)
        return out
    if kind not in _CONTAINERS or _weight(value, PIECE_ITEMS) <= PIECE_ITEMS:
        out.append(values.dumps(value))
        return out
    if kind is dict:
        out.append(head(_MAP, len(value)))
        _runs(list(value.items()), out, pause, as_map=True)
        return out
    if kind is tuple:
        out.append(head(_TAG, TUPLE_TAG))
    out.append(head(_ARRAY, len(value)))
    _runs(list(value), out, pause, as_map=False)
    return out


def _runs(items: Sequence[Any], out: list[bytes], pause: Callable[[], None] | None, *,
          as_map: bool, convert: Callable[[Any], Any] | None = None) -> None:
    """Encode ``items`` (values, or ``(key, value)`` pairs) in order, consecutive small
    ones together; ``convert``, when given, makes each value from its item first."""
    run: list[Any] = []
    used = 0

    def flush() -> None:
        nonlocal run, used
        if run:
            encoded = values.dumps(dict(run) if as_map else run)
            out.append(encoded[len(head(_MAP if as_map else _ARRAY, len(run))):])
            run, used = [], 0
            if pause is not None:
                pause()

    for item in items:
        if convert is not None:
            item = convert(item)
        weight = _weight(item[1] if as_map else item, PIECE_ITEMS) + (2 if as_map else 1)
        if weight > PIECE_ITEMS:
            flush()
            if as_map:
                out.append(cbor2.dumps(item[0]))  # keys are never tagged
                encode_pieces(item[1], out, pause)
            else:
                encode_pieces(item, out, pause)
            continue
        if used + weight > PIECE_ITEMS:
            flush()
        run.append(item)
        used += weight
    flush()
