"""The value model of replicated data: what a command or snapshot may carry, and its codec.

A replicated value is built from ``None``, ``bool``, ``int`` (up to 4096 bits),
``float``, ``str``, ``bytes``, ``list``, ``tuple``, ``dict`` (``str`` or ``bytes`` keys),
``set`` (of ``str`` or ``bytes``), timezone-aware ``datetime.datetime``,
``datetime.date``, finite ``decimal.Decimal`` and ``uuid.UUID``, nested at most
:data:`MAX_DEPTH` levels. Only those exact types: a subclass (an ``IntEnum``, a
``NamedTuple``, an ``OrderedDict``) would come back as its base type, so it is refused
like any other object. Every value of the model decodes equal and of the same type on
every replica (a tuple stays a tuple: it is written with
:data:`~lazily_transports.safe_cbor.TUPLE_TAG`), so what a replicated cell gives back is
what a local cell would.

:func:`scan` checks values before they are encoded (cbor2's encoder would recurse
without a limit and turns tuples into lists); :func:`dumps` encodes them.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Collection
from decimal import Decimal
from typing import Any

import cbor2
from lazily_transports.safe_cbor import TUPLE_TAG, describe

from ..errors import MessageTooLarge, UnsupportedValue

#: Deepest nesting of an op's arguments (the op list is the first level).
MAX_DEPTH = 46
#: What that leaves a value given to a cell, and one given to an op of a transaction
#: (the transaction's op list is one more level).
VALUE_DEPTH = MAX_DEPTH - 1
TRANSACTION_VALUE_DEPTH = MAX_DEPTH - 2
_DATETIME = datetime.datetime
MODEL_TYPES: frozenset[type] = frozenset({
    type(None), bool, int, float, str, bytes, list, tuple, dict, set, _DATETIME,
    datetime.date, Decimal, uuid.UUID,
})
_CONTAINERS = (list, tuple, dict, set)
_KEY_TYPES = frozenset({str, bytes})
#: What the refusals say is allowed.
ALLOWED = ("None, bool, int, float, str, bytes, list, tuple, dict with str or bytes keys, "
           "set of str or bytes, timezone-aware datetime, date, finite Decimal and UUID")


def unsupported(name: str, reason: str) -> UnsupportedValue:
    return UnsupportedValue(
        f"{name}: the value cannot be replicated: {reason}. Replicated values are {ALLOWED}, "
        f"nested at most {VALUE_DEPTH} levels ({TRANSACTION_VALUE_DEPTH} in a transaction); "
        "give the cell a serializer= for other types"
    )


#: The message-limit bytes that allow one container (list, tuple, dict, set) in an op:
#: checking, encoding and decoding each costs every member about a microsecond.
CONTAINER_BYTES = 16
#: Scalars counted with the containers: each is written with a tag and built by a hook
#: on every replica, several microseconds (a megabyte of decimals, 4 bytes each, held a
#: member's loop for two seconds).
_TAGGED = frozenset({Decimal, uuid.UUID, _DATETIME, datetime.date})
_COUNTED = _TAGGED | set(_CONTAINERS)


def _tagged(items: Collection[Any], kinds: set[type]) -> int:
    """How many of ``items`` (of types ``kinds``) are scalars counted as containers."""
    return 0 if kinds.isdisjoint(_TAGGED) else sum(type(item) in _TAGGED for item in items)


def containers(args: list[Any], limit: int) -> int:
    """How many lists, tuples, dicts and sets ``args`` hold (``args`` itself not
    counted), decimals, UUIDs, dates and datetimes counted with them; once past
    ``limit``, a count past it (counting stops)."""
    count = 0
    level: list[Any] = [args]
    while level:
        below: list[Any] = []
        for container in level:
            items = container.values() if type(container) is dict else container
            kinds = set(map(type, items))
            if not kinds.isdisjoint(_COUNTED):
                below += [item for item in items if type(item) in _CONTAINERS]
                count += _tagged(items, kinds)
        count += len(below)
        if count > limit:
            return count
        level = below
    return count


def too_many_containers(name: str, most: int, message_limit: int,
                        besides: str = "") -> MessageTooLarge:
    """The refusal of an op holding more than ``most`` containers."""
    return MessageTooLarge(
        f"{name}: the operation holds more than {most} lists, tuples, dicts and sets "
        f"(decimals, UUIDs, dates and datetimes counted with them; one "
        f"per {CONTAINER_BYTES} bytes of this cluster's {message_limit}-byte "
        f"max_message_bytes{besides}); flatten the value or encode it (bytes or str); "
        "nothing was applied", size=None, limit=message_limit)


def scan(args: list[Any], *, max_items: int, name: str,
         container_limit: int | None = None) -> bool:
    """Check every value in ``args`` against the model, level by level; return whether a
    tuple occurs (the encoding then tags them).

    Raises :class:`UnsupportedValue` naming the first offending type, and
    :class:`MessageTooLarge` past ``max_items`` items (each encodes to at least a byte)
    or, with ``container_limit`` (a ``max_message_bytes``), past one list, tuple, dict or
    set per :data:`CONTAINER_BYTES` bytes of it (decimals, UUIDs, dates and datetimes
    counted with them).
    """
    budget = max_items
    held = 0
    level: list[Any] = [args]
    depth = 1
    tuples = False
    while level:
        if depth > MAX_DEPTH:
            raise unsupported(name, "nesting too deep")
        below: list[Any] = []
        for container in level:
            size = len(container)
            budget -= 2 * size if isinstance(container, dict) else size
            if budget < 0:
                raise MessageTooLarge(
                    f"{name}: the operation holds more than {max_items} items, so it exceeds "
                    f"the {max_items}-byte replicated command limit", size=None,
                    limit=max_items)
            if isinstance(container, dict):
                _check_keys(container.keys(), name)
                items: Collection[Any] = container.values()
            else:
                items = container
            kinds = set(map(type, items))
            if not kinds <= MODEL_TYPES:
                raise unsupported(name, _offender(kinds - MODEL_TYPES, items))
            if tuple in kinds:
                tuples = True
            if _DATETIME in kinds or Decimal in kinds:
                _check_scalars(items, name)
            if isinstance(container, set):
                _check_keys(container, name, "set element")
            elif not kinds.isdisjoint(_CONTAINERS):
                below += [item for item in items if type(item) in _CONTAINERS]
            held += _tagged(items, kinds)
        held += len(below)
        if container_limit is not None and held > container_limit // CONTAINER_BYTES:
            raise too_many_containers(name, container_limit // CONTAINER_BYTES,
                                      container_limit)
        level = below
        depth += 1
    return tuples


#: Types an op argument may have for :func:`plain` (ints are checked for size too).
_PLAIN = frozenset({str, bytes, type(None), bool, float, int})
_INT64 = 1 << 64


def plain(args: list[Any]) -> bool:
    """Whether every value in ``args`` is a scalar that CBOR writes without a tag (``str``,
    ``bytes``, ``None``, ``bool``, ``float``, an ``int`` of at most 64 bits): such args
    are in the model and decode on every replica as they are, with no scan needed."""
    for value in args:
        kind = type(value)
        if kind not in _PLAIN or (kind is int and not -_INT64 <= value < _INT64):
            return False
    return True


def plain_rows(args: list[Any], *, max_items: int) -> bool:
    """Whether every value in ``args`` is :func:`plain` or a list of plain values (the
    rows of a batch of client ops), at most ``max_items`` values in all: in the model,
    untagged, two levels deep (else :func:`scan` says why not)."""
    budget = max_items - len(args)
    for value in args:
        kind = type(value)
        if kind is list:
            budget -= len(value)
            if budget < 0 or not plain(value):
                return False
        elif kind not in _PLAIN or (kind is int and not -_INT64 <= value < _INT64):
            return False
    return True


def _offender(kinds: set[type], items: Collection[Any]) -> str:
    kind = min(kinds, key=lambda k: k.__qualname__)
    bases = [b.__name__ for b in kind.__mro__[1:] if b in MODEL_TYPES]
    what = f"{kind.__module__}.{kind.__qualname__}"
    if bases:
        return f"{what} is a subclass of {bases[0]} and would come back as a plain {bases[0]}"
    return f"{what} is not a replicated type"


def _check_keys(keys: Collection[Any], name: str, what: str = "dict key") -> None:
    kinds = set(map(type, keys))
    if not kinds <= _KEY_TYPES:
        bad = next(k for k in keys if type(k) not in _KEY_TYPES)
        raise unsupported(name, f"{what} {describe(bad)} is not a str or bytes")


def _check_scalars(items: Collection[Any], name: str) -> None:
    for item in items:
        if type(item) is _DATETIME and item.utcoffset() is None:
            raise unsupported(name, f"naive datetime {item.isoformat()} (no timezone; use "
                              "an aware one such as datetime.now(timezone.utc))")
        if type(item) is Decimal and not item.is_finite():
            raise unsupported(name, f"Decimal {item} is not finite")


def tagged(value: Any) -> Any:
    """``value`` with every tuple (at any depth) replaced by its tagged array."""
    kind = type(value)
    if kind is tuple:
        return cbor2.CBORTag(TUPLE_TAG, [tagged(v) for v in value])
    if kind is list:
        return [tagged(v) for v in value]
    if kind is dict:
        return {k: tagged(v) for k, v in value.items()}
    return value


def has_tuples(value: Any) -> bool:
    """Whether a tuple occurs anywhere in ``value`` (lists and dicts are searched)."""
    level = [value]
    while level:
        kinds = set(map(type, level))
        if tuple in kinds:
            return True
        if list not in kinds and dict not in kinds:
            return False
        below: list[Any] = []
        for item in level:
            kind = type(item)
            if kind is list:
                below += item
            elif kind is dict:
                below += item.values()
        level = below
    return False


def dumps(value: Any, *, tuples: bool | None = None) -> bytes:
    """Encode ``value`` (of the model) so that it decodes to an equal value of the same
    types; ``tuples`` says whether it holds tuples (searched for when ``None``)."""
    if tuples is None:
        tuples = has_tuples(value)
    return cbor2.dumps(tagged(value) if tuples else value)
