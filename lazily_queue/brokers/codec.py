"""How values are stored in a broker: CBOR bytes, decoded with the bounded decoder.

Anything the broker holds may have been written by another program, so decoding uses
:data:`lazily_transports.safe_cbor.VALUES` (bounded size, depth and tags). A payload that
does not decode is delivered as :class:`Undecodable` (its raw bytes), never dropped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import cbor2
from lazily_transports.errors import UntrustedDataError
from lazily_transports.safe_cbor import VALUES

from ..errors import UnsupportedValue

#: The largest payload decoded (brokers cap messages lower by default).
MAX_VALUE_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Undecodable:
    """A stored payload that is not a CBOR value this library accepts (written by
    another program); ``data`` holds its bytes and ``reason`` why it was refused."""

    data: bytes
    reason: str


def encode(value: Any) -> bytes:
    """The CBOR bytes of ``value``; :class:`UnsupportedValue` when it has no encoding."""
    try:
        return cbor2.dumps(value)
    except (cbor2.CBOREncodeError, TypeError, ValueError) as exc:
        raise UnsupportedValue(f"cannot store {type(value).__name__} in a broker: {exc}") from None


def decode(data: bytes) -> Any:
    """The value in ``data``, or :class:`Undecodable` when it is not one."""
    try:
        return VALUES.loads(data, max_bytes=MAX_VALUE_BYTES)
    except UntrustedDataError as exc:
        return Undecodable(bytes(data), str(exc))
