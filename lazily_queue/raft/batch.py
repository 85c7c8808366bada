"""The replicated command format: one CBOR batch of operations per Raft entry.

A batch is ``[BATCH_FORMAT, session, floor, ops]``. ``session`` identifies the proposing
node incarnation; ``floor`` says every result of that session below this sequence number
has been received, so the state machine may forget them. Each op is
``[seq, code, *args]``; ``seq`` makes a retried op idempotent. What an op code means is
the state machine's business (:mod:`lazily_queue.replicated.ops`).
"""

from __future__ import annotations

from typing import Any

import cbor2
from lazily_transports.safe_cbor import VALUES, UntrustedDataError, describe

from ..errors import MessageTooLarge
from . import values

#: The batch's format tag (its first element), not an op code.
BATCH_FORMAT = 1
#: Largest message (the value a push or publish carries) a cluster accepts by default.
DEFAULT_MAX_MESSAGE_BYTES = 1024 * 1024
#: Largest ``max_message_bytes`` a node accepts: an append carrying the largest entry stays
#: well below the links' 16 MiB frames.
MAX_MESSAGE_BYTES_LIMIT = 4 * 1024 * 1024
#: Room in a command beyond its largest message: the op's other fields (a queue's name,
#: ids) and the batch header.
COMMAND_OVERHEAD = 64 * 1024
#: Largest command with the default message limit (the decoders' benchmark sizes).
MAX_BATCH_BYTES = DEFAULT_MAX_MESSAGE_BYTES + COMMAND_OVERHEAD
#: Operations proposed together share one entry up to about this size.
BATCH_TARGET_BYTES = 60 * 1024
#: Deepest nesting of a decoded batch (the batch, its op list and an op take 3 levels).
#: Snapshots allow ``VALUES.max_depth``, which leaves room for their own sections.
BATCH_MAX_DEPTH = 48
_OP_MAX_DEPTH = BATCH_MAX_DEPTH - 2


class CommandError(ValueError):
    """A command batch is malformed; it is applied as a no-op with this error."""


def command_limit(max_message_bytes: int) -> int:
    """The largest command (one batch) of a cluster whose messages are at most
    ``max_message_bytes``."""
    return max_message_bytes + COMMAND_OVERHEAD


def encode_command(session: int, floor: int, ops: list[list[Any]]) -> bytes:
    """Encode one batch; values must be of the value model (:mod:`.values`)."""
    return values.dumps([BATCH_FORMAT, session, floor, ops])


def encode_batch(session: int, floor: int, encoded_ops: list[bytes]) -> bytes:
    """:func:`encode_command` from ops already encoded by :func:`encode_checked_op`."""
    head = _HEADS.get(session)
    if head is None:  # the batch's head up to its floor, the same in every batch
        if len(_HEADS) >= 64:
            _HEADS.clear()
        head = _HEADS[session] = b"\x84" + cbor2.dumps([BATCH_FORMAT, session])[1:]
    if type(floor) is not int or not 256 <= floor < 1 << 32:
        head += _SMALL_UINTS[floor] if type(floor) is int and 0 <= floor < 256 else (
            cbor2.dumps(floor))
    elif floor < 65536:  # cbor2's shortest form, written here
        head += b"\x19" + floor.to_bytes(2, "big")
    else:
        head += b"\x1a" + floor.to_bytes(4, "big")
    return head + _array_head(len(encoded_ops)) + b"".join(encoded_ops)


#: The head of the batches of a session, by session (a few sessions per process).
_HEADS: dict[int, bytes] = {}
_SMALL_UINTS = [cbor2.dumps(n) for n in range(256)]


def _array_head(n: int) -> bytes:
    if n < 24:
        return bytes([0x80 | n])
    if n < 256:
        return bytes([0x98, n])
    if n < 65536:
        return b"\x99" + n.to_bytes(2, "big")
    return b"\x9a" + n.to_bytes(4, "big")


def encode_op(seq: int, code: int, args: list[Any]) -> bytes:
    """One op as it sits in a batch."""
    return values.dumps([seq, code, *args])


def encode_checked_op(
    seq: int, code: int, args: list[Any], *, max_bytes: int, name: str,
    message_limit: int | None = None, container_limit: int | None = None,
) -> bytes:
    """Encode one op that every replica will decode, or refuse it at the call (``name``
    names the op in the errors). With ``message_limit`` the op's last argument is a
    user's message, refused over that many bytes; with ``container_limit`` (a
    ``max_message_bytes``) the op is refused past one list, tuple, dict or set per
    :data:`~.values.CONTAINER_BYTES` bytes of it (:func:`~.values.scan`).

    Raises :class:`~lazily_queue.errors.UnsupportedValue` for a value outside the value
    model (:mod:`.values`: its type, a map key, nesting deeper than the limit...) and
    :class:`~lazily_queue.errors.MessageTooLarge` for a message over ``message_limit``
    or an op over ``max_bytes`` whatever its sequence number (see :func:`with_seq`).
    """
    simple = values.plain_rows(args, max_items=max_bytes)
    tuples = False if simple else values.scan(args, max_items=max_bytes, name=name,
                                              container_limit=container_limit)
    op = [seq, code, *args]
    try:
        encoded = values.dumps(op, tuples=True) if tuples else cbor2.dumps(op)
    except (cbor2.CBOREncodeError, UnicodeEncodeError) as exc:
        raise values.unsupported(name, str(exc)[:200]) from None
    if message_limit is not None and args:
        message = args[-1]
        size = len(message) if type(message) is bytes else message_size(encoded, op, message)
        if size > message_limit:
            raise MessageTooLarge(
                f"{name}: a message of {size} bytes exceeds the {message_limit}-byte limit "
                "of this cluster (max_message_bytes); store large payloads elsewhere and "
                "queue a reference, or raise the limit on every node", size=size,
                limit=message_limit)
    if len(encoded) + SEQ_ROOM > max_bytes:
        raise MessageTooLarge(
            f"{name}: the operation of {len(encoded)} bytes (its names and values) exceeds "
            f"the {max_bytes}-byte replicated command limit", size=None, limit=max_bytes)
    if simple:
        return encoded  # plain scalars (and lists of them) decode as they are
    check_decodes(encoded, name)
    return encoded


#: The most bytes a sequence number adds to an op encoded with sequence number 0.
SEQ_ROOM = 8


def with_seq(encoded: bytes, seq: int) -> bytes:
    """``encoded``, an op :func:`encode_checked_op` encoded with sequence number 0, as
    it encodes with ``seq`` (the same bytes a direct encoding gives)."""
    head = 1 if encoded[0] < 0x98 else 1 + (1 << (encoded[0] - 0x98))
    if encoded[head] != 0:
        raise ValueError("not an op encoded with sequence number 0")
    return encoded[:head] + cbor2.dumps(seq) + encoded[head + 1:]


def check_decodes(encoded: bytes, name: str) -> None:
    """Raise :class:`~lazily_queue.errors.UnsupportedValue` unless every replica decodes
    the encoded op (or its arguments): a bignum past the decoder's limit, say."""
    try:
        VALUES.loads(encoded, max_bytes=len(encoded), max_depth=_OP_MAX_DEPTH)
    except UntrustedDataError as exc:
        raise values.unsupported(name, exc.reason) from None


def message_size(encoded_op: bytes, op: list[Any], message: Any) -> int:
    """The size of ``message``, the last element of ``op`` encoded as ``encoded_op``: a
    ``bytes`` or ``str`` message counts its bytes, any other value its encoding."""
    if type(message) is bytes:
        return len(message)
    if type(message) is str:
        return len(message.encode())
    return len(encoded_op) - len(cbor2.dumps(op[:-1]))


#: The batch this process proposed last and what decoding it gives (see :func:`remember`).
_proposed: tuple[bytes, tuple[int, int, list[list[Any]]]] | None = None


def remember(payload: bytes, session: int, floor: int, ops: list[list[Any]]) -> None:
    """Its proposer knows what ``payload`` (a batch it just encoded) decodes to: the next
    :func:`decode_command` of an equal payload returns ``(session, floor, ops)`` once
    without decoding it. ``ops`` must be new lists of :func:`~.values.plain` values,
    exactly what decoding gives."""
    global _proposed
    _proposed = (payload, (session, floor, ops))


def decode_command(payload: bytes) -> tuple[int, int, list[list[Any]]]:
    """Decode one committed batch (values profile); raises :class:`CommandError`."""
    global _proposed
    known = _proposed
    if known is not None and known[0] == payload:
        _proposed = None  # handed out once: its lists belong to that caller
        return known[1]
    try:
        doc = VALUES.loads(payload, max_bytes=len(payload), max_depth=BATCH_MAX_DEPTH)
    except UntrustedDataError as exc:
        raise CommandError(f"command is not valid CBOR: {exc.reason}") from None
    if not isinstance(doc, list) or len(doc) != 4 or doc[0] != BATCH_FORMAT:
        raise CommandError("command is not a batch of format 1")
    _, session, floor, ops = doc
    if not isinstance(session, int) or not isinstance(floor, int) or not isinstance(ops, list):
        raise CommandError("command batch header has the wrong types")
    for op in ops:
        if (
            not isinstance(op, list)
            or len(op) < 2
            or not isinstance(op[0], int)
            or not isinstance(op[1], int)
        ):
            raise CommandError(f"malformed op: {describe(op)}")
    return session, floor, ops
