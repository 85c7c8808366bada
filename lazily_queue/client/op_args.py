"""The arguments of an operation as a client sends them: CBOR in the value model, no
larger than the largest command any cluster accepts."""

from __future__ import annotations

from typing import Any

import cbor2

from ..errors import MessageTooLarge
from ..raft import values
from ..raft.batch import MAX_MESSAGE_BYTES_LIMIT, check_decodes, command_limit
from ..replicated import ops

#: Largest encoded op arguments a client sends (a cluster's own limit may be lower).
MAX_OP_BYTES = command_limit(MAX_MESSAGE_BYTES_LIMIT)


def encode_args(code: int, args: list[Any]) -> bytes:
    """The op's arguments in CBOR, checked against the value model and the largest
    command a cluster accepts (the member checks its own, smaller, message limit)."""
    plain = values.plain(args)  # scalars of the model: nothing to scan, tag or check
    try:
        encoded = cbor2.dumps(args) if plain else values.dumps(
            args, tuples=values.scan(args, max_items=MAX_OP_BYTES, name=ops.op_name(code)))
    except (cbor2.CBOREncodeError, UnicodeEncodeError) as exc:
        raise values.unsupported(ops.op_name(code), str(exc)[:200]) from None
    if not plain:
        check_decodes(encoded, ops.op_name(code))
    if len(encoded) > MAX_OP_BYTES:
        name = ops.op_name(code)
        raise MessageTooLarge(
            f"{name}: the operation of {len(encoded)} bytes exceeds the {MAX_OP_BYTES}-byte "
            "limit of every cluster; store large payloads elsewhere and queue a reference",
            size=len(encoded), limit=MAX_OP_BYTES)
    return encoded
