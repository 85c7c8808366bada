"""Bounded decoding of CBOR that comes from outside: peers, clients, files.

Plain ``cbor2.loads`` lets a few hundred bytes cost exponential time (shared references
building a DAG that is then hashed as a map key), and turns dozens of tags into
arbitrary Python objects. A :class:`CBORProfile` decodes with cbor2's C decoder but
refuses, with :class:`~lazily_transports.errors.UntrustedDataError`:

- input longer than the caller's ``max_bytes`` (checked before decoding);
- nesting (containers and tags) deeper than the profile's depth;
- indefinite lengths and duplicate map keys;
- map keys and set elements that are not text or byte strings (no container is ever
  hashed, no integer keys can be made to collide);
- shared references (tags 28/29), string references (25/256) and every tag not on the
  profile's allow-list, whether cbor2 knows it (:data:`BUILTIN_TAGS`) or not;
- more tagged values than the caller's ``max_tags`` (each tag counted, those cbor2 builds
  itself too, a megabyte of epoch datetimes being half a million objects; a bignum once
  per 8 bytes of its magnitude, each built by a hook of ours: a megabyte of 9-byte ones
  took 73 ms of CPU).

:data:`PROTOCOL` allows no tag (handshakes, Raft frames, metadata). :data:`VALUES` is
for data that carries user values and allows datetimes (0, 1), bignums of at most 4096
bits (2, 3), decimal fractions of at most 256 digits and exponents within +-6144 (4),
UUIDs (37), dates (100, 1004), sets of strings (258) and tuples (:data:`TUPLE_TAG`, an
array that decodes to a ``tuple``, so a tuple and a list stay apart).
"""

from __future__ import annotations

import functools
import gc
import io
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from decimal import Decimal
from typing import Any

import cbor2

from .errors import UntrustedDataError

__all__ = [
    "BUILTIN_TAGS",
    "MAX_BIGNUM_BYTES",
    "MAX_DECIMAL_DIGITS",
    "MAX_DECIMAL_EXPONENT",
    "PROTOCOL",
    "TUPLE_TAG",
    "VALUES",
    "CBORProfile",
    "UntrustedDataError",
    "brief",
    "collection_paused",
    "describe",
]

#: Every tag cbor2 decodes by itself, and what it would build. Each is either refused or
#: allowed by a profile; a test fails when a cbor2 upgrade adds one that is not listed.
BUILTIN_TAGS: Mapping[int, str] = {
    0: "datetime string",
    1: "epoch datetime",
    2: "bignum",
    3: "negative bignum",
    4: "decimal fraction",
    5: "bigfloat",
    25: "string reference",
    28: "shared value",
    29: "shared reference",
    30: "rational number (fractions.Fraction)",
    35: "regular expression (re.Pattern)",
    36: "MIME message",
    37: "UUID",
    52: "IPv4 address or network (ipaddress)",
    54: "IPv6 address or network (ipaddress)",
    100: "epoch date",
    256: "string reference namespace",
    258: "set",
    260: "network address (ipaddress)",
    261: "network prefix (ipaddress)",
    1004: "date string",
    43000: "complex number",
    55799: "self-described CBOR marker",
}

#: The tag of a tuple: an array that decodes to a ``tuple`` (cbor2 writes tuples and lists
#: alike as arrays). A number of the first-come-first-served range, "LQ" then 1.
TUPLE_TAG = 0x4C510001
#: Tags of this package that profiles may allow besides :data:`BUILTIN_TAGS`.
EXTENSION_TAGS: Mapping[int, str] = {TUPLE_TAG: "tuple"}

#: Largest magnitude of a bignum (tags 2/3): 4096 bits.
MAX_BIGNUM_BYTES = 512
#: Largest absolute exponent of a decimal fraction (tag 4), as in IEEE 754 decimal128.
MAX_DECIMAL_EXPONENT = 6144
#: Most digits of a decimal fraction's mantissa (converting more costs quadratic time).
MAX_DECIMAL_DIGITS = 256
_DECIMAL_BOUND = 10**MAX_DECIMAL_DIGITS
_REASON_LIMIT = 200
#: Inputs above this size are decoded with the cyclic garbage collector paused.
GC_PAUSE_BYTES = 64 * 1024


class _Refusal(Exception):
    """Raised inside cbor2's callbacks; cbor2 wraps it, :meth:`CBORProfile.loads` unwraps it."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _tag_name(tag: int) -> str:
    what = BUILTIN_TAGS.get(tag) or EXTENSION_TAGS.get(tag)
    return f"tag {tag} ({what})" if what else f"unknown tag {tag}"


def _refuse_tag(tag: int, value: Any, immutable: bool) -> Any:
    raise _Refusal(f"{_tag_name(tag)} is not allowed here")


def _refuse_unknown(tag: cbor2.CBORTag, immutable: bool) -> Any:
    raise _Refusal(f"{_tag_name(tag.tag)} is not allowed here")


def _bignum(negative: bool, value: Any, immutable: bool) -> int:
    if not isinstance(value, bytes):
        raise _Refusal(f"a bignum must hold a byte string, not {type(value).__name__}")
    if len(value) > MAX_BIGNUM_BYTES:
        raise _Refusal(
            f"an integer of {len(value) * 8} bits (a bignum of {len(value)} bytes) exceeds "
            f"the {MAX_BIGNUM_BYTES * 8:,}-bit limit"
        )
    magnitude = int.from_bytes(value, "big")
    return -1 - magnitude if negative else magnitude


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _decimal(value: Any, immutable: bool) -> Decimal:
    if not isinstance(value, list | tuple) or len(value) != 2:
        raise _Refusal("a decimal fraction must be an array [exponent, mantissa]")
    exponent, mantissa = value
    if not _is_int(exponent) or not _is_int(mantissa):
        raise _Refusal("a decimal fraction's exponent and mantissa must be integers")
    if abs(exponent) > MAX_DECIMAL_EXPONENT:
        raise _Refusal(
            f"decimal exponent {describe(exponent)} is outside +-{MAX_DECIMAL_EXPONENT}"
        )
    if not -_DECIMAL_BOUND < mantissa < _DECIMAL_BOUND:
        raise _Refusal(f"decimal mantissa has more than {MAX_DECIMAL_DIGITS} digits")
    return Decimal(f"{mantissa}E{exponent}")


def _tuple(value: Any, immutable: bool) -> tuple[Any, ...]:
    if not isinstance(value, list):
        raise _Refusal(f"a tuple must hold an array, not {type(value).__name__}")
    return tuple(value)


#: The bignum tags: a budget counts a bignum once per :data:`_BIGNUM_WORD` bytes of its
#: magnitude (once when it has none), so that the budget bounds the hook calls that build
#: them and the bytes they convert.
_BIGNUM_TAGS = (2, 3)
_BIGNUM_WORD = 8


class _TagBudget(Mapping[int, Callable[[Any, bool], Any]]):
    """A profile's tag decoders, counting the tags cbor2 reads: it looks each one up here,
    those it builds itself included (then this raises ``KeyError``, as the profile's
    own mapping would), and past ``limit`` the lookup refuses the input."""

    __slots__ = ("_bignums", "_decoders", "_left", "_limit")

    def __init__(self, decoders: Mapping[int, Callable[[Any, bool], Any]], limit: int) -> None:
        self._decoders = decoders
        self._left = limit
        self._limit = limit
        self._bignums = {tag: functools.partial(self._bignum, tag) for tag in _BIGNUM_TAGS}

    def __getitem__(self, tag: int) -> Callable[[Any, bool], Any]:
        bignum = self._bignums.get(tag)
        if bignum is not None:
            return bignum
        self._spend(tag)
        return self._decoders[tag]

    def _spend(self, tag: int, cost: int = 1) -> None:
        self._left -= cost
        if self._left < 0:
            counted = "" if cost == 1 else f", counted once per {_BIGNUM_WORD} bytes,"
            raise _Refusal(f"more than {self._limit:,} tagged values ({_tag_name(tag)}"
                           f"{counted} is one too many)")

    def _bignum(self, tag: int, value: Any, immutable: bool) -> Any:
        built = self._decoders[tag](value, immutable)  # refuses one over its own bound
        self._spend(tag, max(-(-len(value) // _BIGNUM_WORD), 1))
        return built

    def __len__(self) -> int:
        return len(self._decoders)

    def __iter__(self) -> Iterator[int]:
        return iter(self._decoders)


_ALLOWED_DECODERS: Mapping[int, Callable[[Any, bool], Any]] = {
    2: functools.partial(_bignum, False),
    3: functools.partial(_bignum, True),
    4: _decimal,
    TUPLE_TAG: _tuple,
}


class CBORProfile:
    """One decoding policy: which tags are allowed and how deep values may nest."""

    def __init__(self, name: str, *, max_depth: int, tags: frozenset[int]) -> None:
        unknown = tags - BUILTIN_TAGS.keys() - EXTENSION_TAGS.keys()
        if unknown:
            raise ValueError(f"tags {sorted(unknown)} are not decoded by cbor2 or this module")
        self.name = name
        self.max_depth = max_depth
        self.tags = tags
        decoders: dict[int, Callable[[Any, bool], Any]] = {}
        for tag in BUILTIN_TAGS:
            if tag not in tags:
                decoders[tag] = functools.partial(_refuse_tag, tag)
            elif tag in _ALLOWED_DECODERS:
                decoders[tag] = _ALLOWED_DECODERS[tag]
        for tag in EXTENSION_TAGS.keys() & tags:
            decoders[tag] = _ALLOWED_DECODERS[tag]
        self._decoders: Mapping[int, Callable[[Any, bool], Any]] = decoders
        #: The options of :meth:`loads`'s ``cbor2.loads`` call, for its ``whole`` decoder.
        self._options: dict[str, Any] = {
            "tag_hook": _refuse_unknown, "semantic_decoders": decoders,
            "allow_indefinite": False, "allow_duplicate_keys": False,
            "strict_hashable_types": True}

    def __repr__(self) -> str:
        return f"CBORProfile({self.name!r}, max_depth={self.max_depth}, tags={sorted(self.tags)})"

    def loads(
        self, data: bytes | bytearray | memoryview, *, max_bytes: int, max_depth: int | None = None,
        whole: bool = False, max_tags: int | None = None,
    ) -> Any:
        """Decode one CBOR item or raise :class:`UntrustedDataError` naming what was refused.

        ``max_depth`` may lower (never raise) the profile's depth for this call;
        ``max_tags`` bounds the tagged values (every tag read counts once, nested or not,
        a bignum once per 8 bytes of its magnitude; counted only in inputs longer than
        ``max_tags`` bytes). Bytes
        after the first item are ignored, as cbor2 does, unless ``whole`` (then they are
        refused: the input is not one item). Inputs over
        :data:`GC_PAUSE_BYTES` are decoded with the garbage collector paused: what they
        decode to holds no cycle, and scanning millions of fresh containers would more
        than double the cost.
        """
        size = len(data)
        if size > max_bytes:
            raise UntrustedDataError(f"{size} bytes exceed the {max_bytes}-byte limit")
        depth = self.max_depth if max_depth is None else min(max_depth, self.max_depth)
        decoders = self._decoders
        if max_tags is not None and size > max_tags:
            decoders = _TagBudget(decoders, max_tags)
        pause = size > GC_PAUSE_BYTES and gc.isenabled()
        if pause:
            gc.disable()
        try:
            if not whole:  # the explicit keywords: a ** mapping costs ~0.2 us a call
                return cbor2.loads(
                    data,
                    tag_hook=_refuse_unknown,
                    semantic_decoders=decoders,
                    max_depth=depth,
                    allow_indefinite=False,
                    allow_duplicate_keys=False,
                    strict_hashable_types=True,
                )
            fp = io.BytesIO(data)
            value = cbor2.CBORDecoder(fp, **{**self._options, "max_depth": depth,
                                             "semantic_decoders": decoders}).decode()
        except Exception as exc:  # cbor2 raises CBORDecodeError (and EOF) on bad input
            raise UntrustedDataError(_reason(exc)) from None
        finally:
            if pause:
                gc.enable()
        if fp.tell() != size:
            raise UntrustedDataError(
                f"{size - fp.tell()} of its {size} bytes follow the first item")
        return value


@contextmanager
def collection_paused(size: int) -> Iterator[None]:
    """Pause the cyclic garbage collector while decoding ``size`` bytes, when that is over
    :data:`GC_PAUSE_BYTES` and the collector is on (it is switched back on after)."""
    pause = size > GC_PAUSE_BYTES and gc.isenabled()
    if pause:
        gc.disable()
    try:
        yield
    finally:
        if pause:
            gc.enable()


def _reason(exc: BaseException) -> str:
    """A bounded one-line account of why cbor2 (or one of our callbacks) failed."""
    seen: BaseException | None = exc
    for _ in range(64):
        if seen is None:
            break
        if isinstance(seen, _Refusal):
            return seen.reason
        seen = seen.__cause__ or seen.__context__
    text = str(exc)[:_REASON_LIMIT]
    cause = exc.__cause__
    if cause is not None:
        text = f"{text}: {type(cause).__name__}: {str(cause)[:_REASON_LIMIT]}"
    return text


PROTOCOL = CBORProfile("protocol", max_depth=16, tags=frozenset())
VALUES = CBORProfile(
    "values", max_depth=64, tags=frozenset({0, 1, 2, 3, 4, 37, 100, 258, 1004, TUPLE_TAG})
)


def describe(value: object, *, limit: int = 32) -> str:
    """A bounded description of ``value`` for error messages: type and size, or a short repr."""
    if value is None or isinstance(value, bool | float):
        return repr(value)
    if isinstance(value, int):
        bits = value.bit_length()
        return repr(value) if bits <= 64 else f"int of {bits} bits"
    if isinstance(value, str | bytes | bytearray):
        size = len(value)
        more = "..." if size > limit else ""
        unit = "chars" if isinstance(value, str) else "bytes"
        return f"{type(value).__name__} of {size} {unit} {value[:limit]!r}{more}"
    if isinstance(value, list | tuple | dict | set | frozenset):
        return f"{type(value).__name__} of {len(value)} items"
    return type(value).__name__


def brief(value: object, *, limit: int = 80) -> str:
    """``repr`` of a short string or a small int (as messages always showed them), else
    :func:`describe`."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() <= 256:
        return repr(value)
    if isinstance(value, str | bytes) and len(value) <= limit:
        return repr(value)
    return describe(value)
