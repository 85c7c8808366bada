"""How values are stored in a broker: CBOR bytes, decoded with the bounded decoder.

What is stored is a value of the value model (:mod:`lazily_queue.raft.values`), encoded
as a node encodes it (a tuple is tagged, so it comes back a tuple): it decodes equal and
of the same types. Anything else is refused before it is sent.

Anything the broker holds may have been written by another program, so decoding uses
:data:`lazily_transports.safe_cbor.VALUES` (bounded size, depth and tags). A payload that
does not decode, or holds bytes after its value (plain text such as ``hello world``
starts with a short CBOR string), is delivered as :class:`Undecodable` (its raw bytes),
never dropped nor cut.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import cbor2
from lazily_transports.errors import UntrustedDataError
from lazily_transports.safe_cbor import VALUES

from ..errors import UnsupportedValue
from ..raft import values
from ..raft.batch import check_decodes

#: The largest payload decoded (brokers cap messages lower by default).
MAX_VALUE_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Undecodable:
    """A stored payload that is not a CBOR value this library accepts (written by
    another program); ``data`` holds its bytes and ``reason`` why it was refused."""

    data: bytes
    reason: str


#: What a node's refusal says before its reason.
_REFUSED = "the value cannot be replicated: "


def encode(value: Any) -> bytes:
    """The CBOR bytes of ``value``, a value of the model; :class:`UnsupportedValue`
    naming the offending type otherwise (the same values a node refuses)."""
    try:
        if values.plain([value]):
            try:
                return cbor2.dumps(value)
            except ValueError as exc:  # a str holding a lone surrogate
                raise values.unsupported("broker", str(exc)[:200]) from None
        tuples = values.scan([value], max_items=MAX_VALUE_BYTES, name="broker")
        try:
            encoded = values.dumps(value, tuples=tuples)
        except (cbor2.CBOREncodeError, TypeError, ValueError) as exc:
            raise values.unsupported("broker", str(exc)[:200]) from None
        check_decodes(encoded, "broker")
    except UnsupportedValue as exc:
        reason = str(exc).partition(_REFUSED)[2] or str(exc)
        raise UnsupportedValue(f"cannot store the value in a broker: {reason}") from None
    return encoded


def decode(data: bytes) -> Any:
    """The value in ``data``, or :class:`Undecodable` when it is not one."""
    try:
        return VALUES.loads(data, max_bytes=MAX_VALUE_BYTES, whole=True)
    except UntrustedDataError as exc:
        return Undecodable(bytes(data), str(exc))
