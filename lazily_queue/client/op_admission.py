"""A member admitting a client's op ``[id, OP, seq, floor, code, args, timeout_ms]``
before it waits for its proposal (:func:`admitted_op`): the link's session, the frame's
shape, the client's permission, the op's shape and names, the member's caps on objects
and subscribers (:mod:`..names`) and the op's refusal by the state it finds; each
refusal is a typed error saying that nothing was applied. And a request's
``timeout_ms`` in seconds (:func:`timeout_of`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..names import op_cap_refusal, op_member_problem, op_name_problem
from ..raft.values import CONTAINER_BYTES, too_many_containers
from ..replicated import ops
from . import protocol as P
from .batching import PendingOp
from .connection import ClientConnection
from .op_shapes import op_containers, shape_problem

if TYPE_CHECKING:
    from ..node import Node

#: The longest ``timeout_ms`` a member accepts (an hour).
MAX_TIMEOUT_MS = 3_600_000


def timeout_of(value: Any) -> float:
    """Seconds of a request's ``timeout_ms``; raises :class:`~.protocol.RequestRefused`
    for anything but a number in (0, :data:`MAX_TIMEOUT_MS`]."""
    if (isinstance(value, bool) or not isinstance(value, int | float)
            or not 0 < value <= MAX_TIMEOUT_MS):
        raise P.RequestRefused(f"timeout_ms must be in (0, {MAX_TIMEOUT_MS}]")
    return float(value) / 1000.0


def admitted_op(node: Node, conn: ClientConnection, rid: int, frame: list[Any]) -> PendingOp:
    """The op of ``frame`` read on ``conn``, admitted; raises why it is refused."""
    if conn.session is None:
        raise P.RequestRefused(f"its HELLO was refused: {conn.hello_refused}"
                               if conn.hello_refused else "send HELLO before any op"
                               if not conn.greeted else "register a session (REGISTER) "
                               "before any op")
    if len(frame) != 7:
        raise P.RequestRefused("an op is [id, OP, seq, floor, code, args, timeout_ms]")
    _, _, seq, floor, code, args, timeout_ms = frame
    if (type(seq) is not int or type(floor) is not int or type(code) is not int
            or not isinstance(args, list) or seq < 1 or seq >= 2**63
            or not -seq <= floor <= seq):
        raise P.RequestRefused("seq, floor and code are ints (1 <= seq < 2**63, 0 <= floor "
                               "<= seq: an op is unanswered, so never below the floor; "
                               "negated in the sized form) and args a list")
    timeout = timeout_of(timeout_ms)
    refusal = conn.op_refusal(code, args)
    if refusal is not None:
        raise P.PermissionDenied(refusal)
    op = PendingOp(rid, seq, floor, code, args, timeout, admit(node, code, args))
    refused = conn.state_refusal(op, node.view)
    if refused is not None:
        raise refused
    return op


def admit(node: Node, code: int, args: list[Any]) -> int:
    """Refuse an op whose names (its subscriber's or worker's included) break the
    name rule, which holds more containers than the member's message limit allows
    (:func:`.op_shapes.op_containers`), or which would create an object beyond the
    member's ``max_objects`` or a subscription beyond its ``max_subscribers``
    (:mod:`..names`); the containers it holds."""
    problem = (shape_problem(code, args) or op_name_problem(code, args)
               or op_member_problem(code, args))
    if problem is not None:
        raise P.RequestRefused(f"{ops.op_name(code)}: {problem}; nothing was applied")
    held, most = op_containers(code, args, node.max_message_bytes // CONTAINER_BYTES)
    if held > most:
        raise too_many_containers(ops.op_name(code), most, node.max_message_bytes,
                                  "; a give-back, what a take may answer besides")
    refusal = op_cap_refusal(node.view, code, args, node.max_objects, node.max_subscribers)
    if refusal is not None:
        raise refusal
    return held
