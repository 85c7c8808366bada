"""Proposing a client's ops together.

The ops of one frame a member read from a client (up to ``GROUP_OPS`` of them) become
one ``CLIENT_OPS`` proposal, ``[session, floor, [seq, code, *args], ...]``, instead of one
``CLIENT_OP`` each: one proposal, one encoding and one completion for them all. The
replicated state machine applies each as its own ``CLIENT_OP`` would (the same session,
sequence numbers and deduplication), so a retry of any of them through another member,
alone or in another group, still applies at most once, and each gets its own answer.

An op goes alone (as ``CLIENT_OP``, whose checks then name it) when it is a transaction
(``TXN``, whose messages are not counted here) or its message is over
the cluster's message limit (or, not ``bytes``, ``str`` or a number, near it); a group
is closed before its messages reach :data:`GROUP_SHARE` of the command limit (an op
counting at least :data:`~..raft.values.CONTAINER_BYTES` for each container it holds, so a
group holds few of them, however small their encoding); a group
the replica refuses (a value outside the value model, an encoding over the limit) is
proposed again one op at a time, so the refusal reaches only the op that caused it.
The group's floor is the last op's (the highest its ops carry): a client computes an
op's floor as its oldest unanswered op, and every op of one frame was unanswered when
the frame's last op was sent, so that floor is at most every sequence number in the
group, and the session window is checked against it as for the last op alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import cbor2

from ..raft.values import CONTAINER_BYTES
from ..replicated import ops

#: The share of the replicated command limit one group's messages may take.
GROUP_SHARE = 0.5
#: What an op adds to its group beyond its message (names, numbers, CBOR heads).
OP_OVERHEAD = 256
_SCALARS = (int, float, bool, type(None))


@dataclass(slots=True)
class PendingOp:
    """One client op read, not yet proposed."""

    rid: int
    seq: int
    floor: int
    code: int
    args: list[Any]
    timeout: float
    #: The lists, tuples, dicts and sets its arguments hold (see :mod:`.op_shapes`).
    containers: int = 0


def _message_bytes(op: PendingOp, message_limit: int) -> int | None:
    """The op's size for grouping; ``None`` when it must go alone."""
    if op.code == ops.TXN:
        return None  # its messages are not counted here: alone, its own checks name it
    if op.code not in ops.MESSAGE_OPS:
        return OP_OVERHEAD + op.containers * CONTAINER_BYTES
    message = op.args[-1] if op.args else None
    if type(message) is bytes:
        size = len(message)
    elif type(message) is str:
        size = len(message) if message.isascii() else len(message.encode())
    elif type(message) in _SCALARS:
        return OP_OVERHEAD
    else:  # its encoding, without tuple tags: only well under the limit is it grouped
        size = max(len(cbor2.dumps(message)), op.containers * CONTAINER_BYTES)
        if size * 9 // 8 + OP_OVERHEAD > message_limit:
            return None
    return None if size > message_limit else size + OP_OVERHEAD


def group(pending: list[PendingOp], *, message_limit: int, command_bytes: int
          ) -> list[list[PendingOp]]:
    """``pending`` in proposal order as groups: several ops become one ``CLIENT_OPS``,
    a group of one its ``CLIENT_OP``."""
    budget = int(command_bytes * GROUP_SHARE)
    groups: list[list[PendingOp]] = []
    current: list[PendingOp] = []
    used = 0
    for op in pending:
        size = _message_bytes(op, message_limit)
        if size is None:
            if current:
                groups.append(current)
                current, used = [], 0
            groups.append([op])
            continue
        if current and used + size > budget:
            groups.append(current)
            current, used = [], 0
        current.append(op)
        used += size
    if current:
        groups.append(current)
    return groups


def client_ops(session: int, members: list[PendingOp]) -> list[Any]:
    """The ``CLIENT_OPS`` arguments of a group (its floor negated, the sized form, when
    one of its ops came so)."""
    floor = max(abs(op.floor) for op in members)
    return [session, -floor if min(op.floor for op in members) < 0 else floor,
            *([op.seq, op.code, *op.args] for op in members)]


def answer_each(members: list[PendingOp],
                answer: Callable[[PendingOp, Any, BaseException | None], None]
                ) -> Callable[[Any, BaseException | None], None]:
    """The completion of a group's proposal: each op answered with its own result (or
    the proposal's error, or its refusal as a whole: each op's answer, such as a retried
    proposal's whose results are no longer kept)."""

    def done(result: Any, error: BaseException | None) -> None:
        if error is None and isinstance(result, ops.OpError):
            result = [result] * len(members)
        if error is None and (not isinstance(result, list) or len(result) != len(members)):
            error = ValueError(f"client ops: expected {len(members)} results, got {result!r:.80}")
        for k, op in enumerate(members):
            answer(op, None if error is not None else result[k], error)

    return done
