"""Transactions: ``TXN`` applies the ops it carries all or none, in one log entry.

``TXN`` is ``[[code, *args], ...]``: up to :data:`~lazily_queue.core.txn.MAX_TXN_OPS`
ops of :data:`~.ops.TXN_OPS` (queue pushes, topic publishes, work-queue pushes, acks and
nacks, each with or without a producer message id), in the arguments their plain op
takes. Every op is first checked against the state as the earlier ops of the same
transaction leave it (:class:`~lazily_queue.core.txn.TxnCheck`): an undeclared object,
a closed or full queue, a settlement of a delivery that is not a live lease of that
worker (expired and reaped, settled, another's, or settled earlier in the same
transaction). The first op that would fail aborts the transaction: nothing applies and
the result is ``[False, index, code, message]``. Otherwise every op applies, in order,
as its plain op would (events, receipts, dedup window and mirrors' reports alike) and
the result is ``[True, [result, ...]]``, one plain result per op.

A push with a producer message id that is in the dedup window, or used by an earlier op
of the same transaction, applies nothing and returns the first push's result; it never
aborts the transaction (the window is consulted before the queue's state, as for a
plain deduplicated push). A retried ``TXN`` (the same session and sequence number)
returns the recorded result, as any op does.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ..core.dedup import MAX_MSG_ID_CHARS
from ..core.headers import check_headers
from ..core.queue import QueuePushError
from ..core.topic_expiry import expiring_at_head
from ..core.txn import MAX_TXN_OPS, Refusal, TxnCheck
from ..core.work_options import WorkPushOptions
from ..errors import InvalidHeaders, shown
from . import ops
from .dedup import DedupKey
from .events import TransactionApplied
from .family import Family
from .ops import OpError, OpRefused
from .options import decode_options
from .work_queues import _time

if TYPE_CHECKING:
    from .state_machine import StateMachine

log = logging.getLogger(__name__)

_ARITY = {ops.QUEUE_PUSH: 2, ops.TOPIC_PUBLISH: 2, ops.WORK_PUSH: 2,
          ops.QUEUE_PUSH_ONCE: 3, ops.TOPIC_PUBLISH_ONCE: 3, ops.WORK_PUSH_ONCE: 3,
          ops.WORK_ACK: 3, ops.WORK_NACK: 3, ops.QUEUE_PUSH_HEADERS: 4,
          ops.TOPIC_PUBLISH_HEADERS: 4, ops.WORK_PUSH_HEADERS: 4, ops.QUEUE_PUSH_OPTIONS: 3,
          ops.TOPIC_PUBLISH_OPTIONS: 3, ops.WORK_PUSH_OPTIONS: 4}
#: The work-queue pushes (a consumer group's queue refuses them).
_WORK_PUSHES = (ops.WORK_PUSH, ops.WORK_PUSH_ONCE, ops.WORK_PUSH_HEADERS,
                ops.WORK_PUSH_OPTIONS)
_UNKNOWN = {"queue": "unknown_queue", "topic": "unknown_topic",
            "work_queue": "unknown_work_queue"}
_KIND = {"queue": "queue", "topic": "topic", "work_queue": "work queue"}


class _Abort(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


#: How one checked op applies: ``None`` as its plain op; ``("once", key)`` as its plain
#: push, then recorded under ``key``; ``("window", result)`` not at all, answering the
#: window's result; ``("repeat", index)`` not at all, answering op ``index``'s result.
Plan = tuple[str, Any] | None


def _exists(sm: StateMachine, family: str, name: str) -> Any:
    table: dict[str, Any] = (sm.queues if family == "queue" else sm.topics
                             if family == "topic" else sm.work_queues)
    found = table.get(name)
    if found is None:
        raise _Abort(_UNKNOWN[family], f"{_KIND[family]} {shown(name)} has not been declared")
    return found


def _raise(refusal: Refusal) -> None:
    if refusal is not None:
        raise _Abort(*refusal)


def _check_op(sm: StateMachine, check: TxnCheck, firsts: dict[DedupKey, int], index: int,
              op: Any) -> Plan:
    if type(op) is not list or not op or op[0] not in ops.TXN_OPS:
        code = op[0] if type(op) is list and op else op
        raise _Abort("bad_op", f"{shown(ops.op_name(code) if type(code) is int else code)} "
                     "cannot be part of a transaction")
    code, args = op[0], op[1:]
    if len(args) != _ARITY[code] or type(args[0]) is not str or not args[0]:
        raise _Abort("bad_args", f"{ops.op_name(code)} takes {_ARITY[code]} arguments, "
                     "the first the object's name")
    family = ops.family_of(code) or ""
    name = args[0]
    plan: Plan = None
    headers = code in ops.HEADER_OPS
    if headers:
        try:
            if check_headers(args[1]) is None:
                raise InvalidHeaders("a push with headers needs at least one")
        except InvalidHeaders as exc:
            raise _Abort("bad_headers", str(exc)) from None
    msg_id = args[1] if code in ops.ONCE_OPS else args[2] if headers else None
    level, delayed = 0, False
    if code in (ops.QUEUE_PUSH_OPTIONS, ops.TOPIC_PUBLISH_OPTIONS, ops.WORK_PUSH_OPTIONS):
        try:
            options = decode_options(code, args[1])
            if isinstance(options, WorkPushOptions):  # [name, options, now | None, value]
                at = _time(sm, args[2])
                due = options.due_ms(at)
                level, delayed = options.level, due is not None and due > at
        except OpRefused as exc:
            raise _Abort(exc.error.code, exc.error.message) from None
        msg_id = options.msg_id
        headers = True  # the op deduplicates itself
    if msg_id is not None or code in ops.ONCE_OPS:
        if type(msg_id) is not str or not 0 < len(msg_id) <= MAX_MSG_ID_CHARS:
            raise _Abort("bad_msg_id", f"msg_id must be a non-empty str of at most "
                         f"{MAX_MSG_ID_CHARS} characters")
        key: DedupKey = (family, name, msg_id)
        found, first = sm.dedup.peek(key, sm.now)
        if check.repeated_id(key, found):
            return ("window", first) if found else ("repeat", firsts[key])
        firsts[key] = index
        plan = None if headers else ("once", key)  # a header op deduplicates itself
    target = _exists(sm, family, name)
    if code in _WORK_PUSHES and target.group is not None:
        raise _Abort("group_push", f"{shown(name)} is group {shown(target.group[1])} of topic "
                     f"{shown(target.group[0])}, fed by the topic: publish to the topic")
    if code in (ops.QUEUE_PUSH, ops.QUEUE_PUSH_ONCE, ops.QUEUE_PUSH_HEADERS,
                ops.QUEUE_PUSH_OPTIONS):
        # A push with options first makes the delayed elements due at this entry ready.
        due = target.due_len(sm.now) if code == ops.QUEUE_PUSH_OPTIONS else 0
        _raise(check.queue_push(name, name, target, args[-1], due))
    elif code in (ops.WORK_ACK, ops.WORK_NACK):
        _raise(check.settle(name, name, target.core, args[1], args[2]))
    elif code in _WORK_PUSHES:
        _raise(check.work_push(name, name, target.core, args[-1], level, delayed))
    elif code in (ops.TOPIC_PUBLISH, ops.TOPIC_PUBLISH_ONCE, ops.TOPIC_PUBLISH_HEADERS,
                  ops.TOPIC_PUBLISH_OPTIONS):
        rules = sm.expiry.get(("topic", name)) if sm.expiry else None
        _raise(check.topic_publish(("topic", name), name, target, args[-1],
                                   expiring_at_head(target, rules, sm.now)))
    return plan


def check(sm: StateMachine, txn: list[Any]) -> tuple[int, str, str] | list[Plan]:
    """The plan of each op of ``txn``, or ``(index, code, message)`` of the first that
    would fail; changes nothing."""
    if len(txn) > MAX_TXN_OPS:
        return 0, "too_many_ops", (f"a transaction carries at most {MAX_TXN_OPS} ops, "
                                   f"not {len(txn)}")
    state = TxnCheck()
    firsts: dict[DedupKey, int] = {}
    plans: list[Plan] = []
    for index, op in enumerate(txn):
        try:
            plans.append(_check_op(sm, state, firsts, index, op))
        except _Abort as exc:
            return index, exc.code, exc.message
    return plans


def _failed(result: Any) -> bool:
    return isinstance(result, (OpError, QueuePushError)) or (
        type(result) is list and len(result) == 4 and result[0] is False)


def apply(sm: StateMachine, args: list[Any]) -> Any:
    """The ``TXN`` handler (module docstring)."""
    plans = check(sm, args)
    if isinstance(plans, tuple):
        sm.emit(TransactionApplied(False, len(args)))
        return [False, *plans]
    results: list[Any] = []
    for op, plan in zip(args, plans, strict=True):
        if plan is None:
            result = sm.apply_plain(op[0], op[1:])
        elif plan[0] == "once":
            result = sm.apply_plain(ops.ONCE_OPS[op[0]], [op[1], op[3]])
            if not _failed(result):
                sm.dedup.record(plan[1], result, sm.now)
        elif plan[0] == "window":
            sm.dedup.hits += 1
            result = plan[1]
        else:
            result = results[plan[1]]
        if _failed(result):  # the check mirrors every refusal; this is a defect
            log.error("a checked transaction op %s failed while applying: %s",
                      ops.op_name(op[0]), result)
        results.append(result)
    sm.emit(TransactionApplied(True, len(args)))
    return [True, results]


FAMILY = Family("transactions", {ops.TXN: apply})
