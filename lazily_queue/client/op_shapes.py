"""The shape of each op a client may propose: how many arguments, and the type of those
whose type the state machine relies on (names, subscribers and workers are strings,
delivery ids, counts and offsets ints, id lists lists, times finite numbers, a
subscription's durability one of its two).

A member checks a client's op against it before proposing it (:func:`shape_problem`):
an op of the wrong shape is refused at once, so it never reaches the log, where it
could only fail while applying on every member. Values and options are checked where
they are applied (a wrong one is refused there with its reason), and so is the
rest of a transaction (:mod:`..replicated.transactions`): here, only the shape of each
op it carries. A give-back's id runs must cover its values one for one: the state
machine expands the runs of one with headers before it counts them, so runs covering
billions of ids would hold every member in that op's apply. A settlement of several
deliveries names each once: every repeat of a settled one is answered with its receipt,
so a megabyte naming one id a million times cost every member seconds of apply and its
client session a result of hundreds of megabytes. An op's arguments hold at most one
list, tuple, dict or set per :data:`~..raft.values.CONTAINER_BYTES` bytes of the message limit (a
give-back, what a take may answer besides: :func:`op_containers`): checking, encoding
and decoding each costs every member about a microsecond and 64 bytes or more of
memory, so a megabyte of empty lists held the proposing member's event loop for
seconds (its leadership lost) and took 70 MB on each. Decimals, UUIDs, dates and
datetimes count as containers (:func:`~..raft.values.containers`): a megabyte of
decimals held it two seconds.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ..core import ids
from ..core.topic import Durability
from ..errors import shown
from ..raft.values import containers
from ..replicated import ops
from ..replicated.take_bytes import TAKE_BYTES

#: Argument kinds: any value, a string, an int (not a bool), an int >= 0 (>= 1), a list, a
#: list of ints (ids; None where it means every one), a time (a finite number of ms
#: >= 0, or None: the leader's stamp), a subscription's durability.
ANY, STR, INT, NAT, POS = "value", "string", "int", "non-negative int", "positive int"
LIST, INTS, OPT_INTS = "list", "list of ints", "list of ints or None"
TIME, DURABILITY = "time in ms (or None)", f"durability ({' or '.join(Durability)})"


def _time(value: Any) -> bool:
    return value is None or (type(value) in (int, float) and math.isfinite(value)
                             and value >= 0)


_CHECKS: dict[str, Callable[[Any], bool]] = {
    ANY: lambda value: True,
    STR: lambda value: type(value) is str,
    INT: lambda value: type(value) is int,
    NAT: lambda value: type(value) is int and value >= 0,
    POS: lambda value: type(value) is int and value >= 1,
    LIST: lambda value: type(value) is list,
    INTS: lambda value: type(value) is list and all(type(i) is int for i in value),
    OPT_INTS: lambda value: value is None or _CHECKS[INTS](value),
    TIME: _time,
    DURABILITY: lambda value: type(value) is str and value in Durability.__members__.values(),
}

#: Each op's arguments after its name, by kind (see :mod:`..replicated.ops`).
_AFTER_NAME: dict[int, tuple[str, ...]] = {
    ops.QUEUE_DECLARE: (ANY,),
    ops.QUEUE_PUSH: (ANY,),
    ops.QUEUE_POP: (),
    ops.QUEUE_CLOSE: (),
    ops.QUEUE_UNPOP: (ANY,),
    ops.QUEUE_POP_MANY: (INT,),
    ops.QUEUE_UNPOP_MANY: (LIST,),
    ops.QUEUE_PUSH_ONCE: (ANY, ANY),
    ops.TOPIC_DECLARE: (),
    ops.TOPIC_PUBLISH: (ANY,),
    ops.TOPIC_SUBSCRIBE: (STR, DURABILITY),
    ops.TOPIC_RECONNECT: (STR,),
    ops.TOPIC_DISCONNECT: (STR,),
    ops.TOPIC_ADVANCE: (STR,),
    ops.TOPIC_GC: (),
    ops.TOPIC_RESTORE: (ANY,),
    ops.TOPIC_ADVANCE_TO: (STR, NAT),
    ops.TOPIC_PUBLISH_ONCE: (ANY, ANY),
    ops.WORK_DECLARE: (ANY, ANY),
    ops.WORK_PUSH: (ANY,),
    ops.WORK_CLAIM: (STR, TIME),
    ops.WORK_ACK: (STR, INT),
    ops.WORK_NACK: (STR, INT),
    ops.WORK_REAP: (TIME,),
    ops.WORK_EXTEND: (STR, INT, TIME),
    ops.WORK_REDRIVE: (OPT_INTS,),
    ops.WORK_CLAIM_MANY: (STR, POS, TIME),
    ops.WORK_RELEASE: (STR, INTS),
    ops.QUEUE_PURGE: (),
    ops.QUEUE_DELETE: (),
    ops.TOPIC_DELETE: (),
    ops.WORK_PURGE: (ANY,),
    ops.WORK_DELETE: (),
    ops.TOPIC_DELETE_SUBSCRIBER: (STR,),
    ops.WORK_SETTLE_MANY: (STR, STR, INTS),
    ops.WORK_PUSH_ONCE: (ANY, ANY),
    ops.QUEUE_POP_STAMPED: (INT,),
    ops.QUEUE_UNPOP_STAMPED: (LIST, LIST),
    ops.TOPIC_SUBSCRIBE_AT: (STR, DURABILITY, ANY),
    ops.TOPIC_SEEK: (STR, INT),
    ops.GROUP_DECLARE: (STR, ANY, ANY, ANY),
    ops.TOPIC_SUBSCRIBE_AT_TIME: (STR, DURABILITY, INT),
    ops.TOPIC_SEEK_TIME: (STR, INT),
    ops.QUEUE_PUSH_HEADERS: (ANY, ANY, ANY),
    ops.QUEUE_POP_HEADERS: (INT,),
    ops.QUEUE_UNPOP_HEADERS: (LIST, LIST, LIST),
    ops.TOPIC_PUBLISH_HEADERS: (ANY, ANY, ANY),
    ops.WORK_PUSH_HEADERS: (ANY, ANY, ANY),
    ops.WORK_DECLARE_RETRY: (ANY, ANY, ANY),
    ops.WORK_PUSH_SCHEDULED: (ANY, ANY, ANY, TIME, ANY),
    ops.WORK_NACK_DELAYED: (STR, INT, ANY, TIME),
    ops.QUEUE_PUSH_TTL: (ANY, ANY),
    ops.WORK_PUSH_TTL: (ANY, ANY),
    ops.EXPIRY_RULES: (ANY, ANY, ANY),
    ops.EXPIRE: (ANY, POS),
    ops.QUEUE_DECLARE_LIMITED: (ANY,),
    ops.TOPIC_DECLARE_LIMITED: (ANY,),
    ops.WORK_DECLARE_LIMITED: (ANY, ANY, ANY),
    ops.QUEUE_PUSH_OPTIONS: (ANY, ANY),
    ops.TOPIC_PUBLISH_OPTIONS: (ANY, ANY),
    ops.WORK_PUSH_OPTIONS: (ANY, TIME, ANY),
    ops.WORK_DECLARE_OPTIONS: (ANY, ANY, ANY),
}

#: The give-backs: ``[name, values, runs, ...]``, the runs covering the values.
_GIVE_BACKS = frozenset({ops.QUEUE_UNPOP_STAMPED, ops.QUEUE_UNPOP_HEADERS})
#: Every op giving popped elements back: its values may be a whole take's.
_GIVING_BACK = frozenset({ops.QUEUE_UNPOP, ops.QUEUE_UNPOP_MANY, *_GIVE_BACKS})
#: The containers a take's values hold at most besides its first's: each counts 64 bytes
#: or more of the take's bound (:data:`~..replicated.take_bytes.TAKE_BYTES`).
TAKE_CONTAINERS = TAKE_BYTES // 64


def op_containers(code: int, args: list[Any], most: int) -> tuple[int, int]:
    """The containers op ``code``'s ``args`` hold (:func:`containers`) and how many it
    may: ``most``, or for a give-back, what the take it gives back may hold (its values
    counted, not the id runs and headers describing them)."""
    if code in _GIVING_BACK:
        return containers(args[:2], most + TAKE_CONTAINERS), most + TAKE_CONTAINERS
    return containers(args, most), most


def _runs_problem(values: list[Any], runs: Any) -> str | None:
    """Why ``runs`` are not the id runs of ``values`` given back; ``None`` when they are."""
    try:
        covered = ids.covered(ids.checked_runs(runs, "its argument 3"))
    except ValueError as exc:
        return str(exc)
    if covered != len(values):
        return (f"its id runs (argument 3) cover {covered} ids, not one for each of the "
                f"{len(values)} values given back")
    return None


def shape_problem(code: int, args: list[Any]) -> str | None:
    """Why ``args`` are not the arguments of op ``code`` (for a transaction, of one of
    its ops); ``None`` when they have its shape, or the op has none here (a cluster op,
    an op no client may propose: refused elsewhere)."""
    if code == ops.TXN:
        for position, op in enumerate(args, start=1):
            if type(op) is list and op and type(op[0]) is int:
                problem = shape_problem(op[0], op[1:])
                if problem is not None:
                    return f"its op {position} ({ops.op_name(op[0])}): {problem}"
        return None  # the rest of a transaction's shape is checked where it applies
    after = _AFTER_NAME.get(code)
    if after is None:
        return None
    if len(args) != len(after) + 1:
        return (f"takes {len(after) + 1} arguments [name{''.join(', ' + k for k in after)}], "
                f"not {len(args)}")
    if type(args[0]) is not str:
        return "its first argument, the name, must be a string"
    for position, (kind, value) in enumerate(zip(after, args[1:], strict=True), start=2):
        if not _CHECKS[kind](value):
            article = "an" if kind[0] in "aeiou" else "a"
            return (f"its argument {position} must be {article} {kind}, not "
                    f"{type(value).__name__} {shown(value)}")
    if code == ops.WORK_SETTLE_MANY and len(set(args[3])) != len(args[3]):
        return "its delivery ids (argument 4) name one delivery more than once"
    return _runs_problem(args[1], args[2]) if code in _GIVE_BACKS else None
