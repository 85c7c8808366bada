"""The replicated command format: one CBOR batch of operations per Raft entry.

A batch is ``[BATCH_FORMAT, session, floor, ops]``. ``session`` identifies the proposing
node incarnation; ``floor`` says every result of that session below this sequence number
has been received, so the state machine may forget them. Each op is
``[seq, code, *args]``; ``seq`` makes a retried op idempotent. What an op code means is
the state machine's business (:mod:`lazily_queue.replicated.ops`).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import cbor2
from lazily_transports.safe_cbor import VALUES, UntrustedDataError, describe

from ..errors import UnsupportedValue

#: The batch's format tag (its first element), not an op code.
BATCH_FORMAT = 1
#: Largest batch a replica decodes (the engine refuses to propose more than 60 KiB).
MAX_BATCH_BYTES = 64 * 1024
#: Deepest nesting of a decoded batch (the batch, its op list and an op take 3 levels).
#: Snapshots allow ``VALUES.max_depth``, which leaves room for their own sections.
BATCH_MAX_DEPTH = 48
_OP_MAX_DEPTH = BATCH_MAX_DEPTH - 2
_CONTAINERS = (list, tuple, dict, set, frozenset)

class CommandError(ValueError):
    """A command batch is malformed; it is applied as a no-op with this error."""


def encode_command(session: int, floor: int, ops: list[list[Any]]) -> bytes:
    """Encode one batch; values must be CBOR-serialisable."""
    return cbor2.dumps([BATCH_FORMAT, session, floor, ops])


def encode_op(seq: int, code: int, args: list[Any]) -> bytes:
    """The encoded size contribution of one op (used to cap batch sizes)."""
    return cbor2.dumps([seq, code, *args])


def encode_checked_op(
    seq: int, code: int, args: list[Any], *, max_bytes: int, name: str
) -> bytes:
    """Encode one op that every replica will decode, or refuse it at the call (``name``
    names the op in the errors).

    Raises :class:`~lazily_queue.errors.UnsupportedValue` for a value the values profile
    of :mod:`lazily_transports.safe_cbor` refuses (an ``int`` map key, a ``Fraction``, nesting
    deeper than the limit...) and ``ValueError`` for an op over ``max_bytes``.
    """
    _check_nesting(args, max_bytes, name)
    try:
        encoded = encode_op(seq, code, args)
    except cbor2.CBOREncodeError as exc:
        raise _unsupported(name, str(exc)[:200]) from None
    if len(encoded) > max_bytes:
        raise ValueError(
            f"operation of {len(encoded)} bytes exceeds the {max_bytes}-byte replicated command "
            "limit; store large payloads elsewhere and queue a reference"
        )
    try:
        VALUES.loads(encoded, max_bytes=MAX_BATCH_BYTES, max_depth=_OP_MAX_DEPTH)
    except UntrustedDataError as exc:
        raise _unsupported(name, exc.reason) from None
    return encoded


def _unsupported(name: str, reason: str) -> UnsupportedValue:
    return UnsupportedValue(
        f"{name}: the value cannot be replicated: {reason}. Replicated values are None, bool, "
        "int, float, str, bytes, lists and tuples, dicts with str or bytes keys, sets of str "
        f"or bytes, datetime, date, Decimal and UUID, nested at most {_OP_MAX_DEPTH - 1} levels"
    )


def _check_nesting(args: list[Any], max_bytes: int, name: str) -> None:
    """Refuse values nested deeper than replicas decode before cbor2 encodes them (its
    encoder recurses without a limit). Every item encodes to at least one byte, so the
    walk stops after ``max_bytes`` items."""
    budget = max_bytes
    level: list[Any] = [args]
    depth = 1
    while level:
        if depth > _OP_MAX_DEPTH:
            raise _unsupported(name, f"nesting deeper than {_OP_MAX_DEPTH} levels")
        below: list[Any] = []
        for container in level:
            budget -= 2 * len(container) if isinstance(container, dict) else len(container)
            if budget < 0:
                raise ValueError(
                    f"operation holds more than {max_bytes} items, so it exceeds the "
                    f"{max_bytes}-byte replicated command limit; store large payloads "
                    "elsewhere and queue a reference"
                )
            if isinstance(container, dict):
                below += _containers(container.keys())
                below += _containers(container.values())
            else:
                below += _containers(container)
        level = below
        depth += 1


def _containers(items: Collection[Any]) -> list[Any]:
    """The items of ``items`` that cbor2 encodes as arrays or maps (types first: cheaper)."""
    if not any(issubclass(kind, _CONTAINERS) for kind in set(map(type, items))):
        return []
    return [item for item in items if isinstance(item, _CONTAINERS)]


def decode_command(payload: bytes) -> tuple[int, int, list[list[Any]]]:
    """Decode one committed batch (values profile); raises :class:`CommandError`."""
    try:
        doc = VALUES.loads(payload, max_bytes=MAX_BATCH_BYTES, max_depth=BATCH_MAX_DEPTH)
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
