"""The replicated command format: one CBOR batch of operations per Raft entry.

A batch is ``[1, session, floor, ops]``. ``session`` identifies the proposing node
incarnation; ``floor`` says every result of that session below this sequence number
has been received, so the state machine may forget them. Each op is
``[seq, code, *args]``; ``seq`` makes a retried op idempotent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import cbor2

FORMAT = 1

# Queue operations.
QUEUE_DECLARE = 1  # [name, capacity | None]
QUEUE_PUSH = 2  # [name, value]
QUEUE_POP = 3  # [name]
QUEUE_CLOSE = 4  # [name]
QUEUE_UNPOP = 5  # [name, value]: return an undelivered element to the head
# Cluster operations.
BARRIER = 9  # []
MEMBER_ADDRESS = 10  # [node_id, address]
# Topic operations: 20..29; work queue operations: 30..39.
TOPIC_DECLARE = 20
TOPIC_PUBLISH = 21
TOPIC_SUBSCRIBE = 22
TOPIC_RECONNECT = 23
TOPIC_DISCONNECT = 24
TOPIC_ADVANCE = 25
TOPIC_GC = 26
TOPIC_RESTORE = 27  # [name, snapshot]: replace the topic's state (administration, seeding)
WORK_DECLARE = 30
WORK_PUSH = 31
WORK_CLAIM = 32
WORK_ACK = 33
WORK_NACK = 34
WORK_REAP = 35
WORK_EXTEND = 36
WORK_REDRIVE = 37

OP_NAMES = {v: k.lower() for k, v in dict(globals()).items() if k.isupper() and isinstance(v, int)}
OP_NAMES.pop(FORMAT, None)


class CommandError(ValueError):
    """A command batch is malformed; it is applied as a no-op with this error."""


@dataclass(frozen=True)
class OpError:
    """An operation the state machine refused; ``code`` is stable, ``message`` explains."""

    code: str
    message: str

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


def encode_command(session: int, floor: int, ops: list[list[Any]]) -> bytes:
    """Encode one batch; values must be CBOR-serialisable."""
    return cbor2.dumps([FORMAT, session, floor, ops])


def encode_op(seq: int, code: int, args: list[Any]) -> bytes:
    """The encoded size contribution of one op (used to cap batch sizes)."""
    return cbor2.dumps([seq, code, *args])


def decode_command(payload: bytes) -> tuple[int, int, list[list[Any]]]:
    try:
        doc = cbor2.loads(payload)
    except Exception as exc:
        raise CommandError(f"command is not valid CBOR: {exc}") from exc
    if not isinstance(doc, list) or len(doc) != 4 or doc[0] != FORMAT:
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
            raise CommandError(f"malformed op {op!r:.60}")
    return session, floor, ops
