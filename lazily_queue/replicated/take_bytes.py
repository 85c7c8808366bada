"""What one take of a queue or claim of a work queue answers at most, so that its result
is kept: a take or claim sent again after a failover is then answered with it
(:mod:`.session_results`) rather than lost or refused as no longer kept.

Both stop before the element (item) whose value would bring their values past
:data:`TAKE_BYTES` as :func:`~.results.result_size` counts them, plus an allowance each
for what the result holds besides the value; the first goes whatever its size.

A client's take or claim proposed in the sized form (its floor negated, see
:mod:`.state_machine`) is also held to the room its session's kept results leave
(:func:`room_of`), so that it never gives up an unanswered take's result of its session:
when its first element does not fit that room it takes nothing and answers
:data:`NO_ROOM` (its client sends it again under a new sequence number once its earlier
ops are answered). With nothing kept the room is whole and the first goes whatever its
size, as in the old form.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..core.headers import MAX_HEADER_BYTES
from . import ops
from .ops import OpError
from .results import result_size
from .session_results import SESSION_KEPT_BYTES, Session

#: What the values one take pops (one claim leases) come to at most, with their
#: allowances (its first goes whatever its size): half what a client's session keeps.
TAKE_BYTES = SESSION_KEPT_BYTES // 2
#: What each element of a take counts for its headers while the queue holds some: about
#: the most the largest headers allowed come to.
HEADERS_ALLOWANCE = 2 * MAX_HEADER_BYTES
#: What each delivery of a claim counts besides its value and worker: at least what
#: its dict, keys and numbers (below 2**64) come to as ``result_size`` counts them.
DELIVERY_ALLOWANCE = 1024
#: What each element of a sized take counts besides its allowance, and what its result
#: counts besides its elements: at least what the lists holding them and a run of ids and
#: stamps each come to as ``result_size`` counts them.
ROOM_PER_ELEMENT, ROOM_PER_RESULT = 256, 1024
#: The ops held to their session's room in the sized form.
SIZED_TAKES = frozenset({ops.QUEUE_POP_MANY, ops.QUEUE_POP_STAMPED, ops.QUEUE_POP_HEADERS,
                         ops.WORK_CLAIM_MANY})
#: What a take or claim answers when its session has no room for its first element:
#: nothing was taken.
NO_ROOM = OpError("no_room", "nothing was taken: the results its session keeps for its "
                  "takes still unanswered leave no room for the first element (a client "
                  "sends it again once its earlier operations are answered)")


def room_of(session: Session) -> int:
    """What a client session's kept results leave of :data:`SESSION_KEPT_BYTES`."""
    return SESSION_KEPT_BYTES - session.kept_bytes


class TakeBudget:
    """How many values one take (or claim) takes, asked with the values it would take
    next in order (once, or again with the next ones after as many as it answered):
    those that with all counted before come to :data:`TAKE_BYTES` at most, each counted
    as :func:`~.results.result_size` counts it plus ``per``, and the first whatever its
    size; none once one did not fit. Given its session's ``room``, each counts
    :data:`ROOM_PER_ELEMENT` more, they come to ``room`` less :data:`ROOM_PER_RESULT` at
    most too, and the first goes only when it fits that unless the room is whole (else
    :attr:`short`: none goes)."""

    __slots__ = ("limit", "per", "room", "short", "total")

    def __init__(self, per: int, room: int | None = None) -> None:
        self.total, self.short = 0, False
        if room is None:
            self.per, self.limit, self.room = per, TAKE_BYTES, None
            return
        self.per = per + ROOM_PER_ELEMENT
        self.limit = min(TAKE_BYTES, room - ROOM_PER_RESULT)
        #: The most the first may count (``None``: whatever; a session keeping nothing).
        self.room = None if room >= SESSION_KEPT_BYTES else room - ROOM_PER_RESULT

    def __call__(self, values: Iterable[Any]) -> int:
        counted = total = self.total
        per, limit, k = self.per, self.limit, 0
        for value in values:
            kind = type(value)  # bytes and str counted here as result_size counts them
            total += per + (41 + len(value) if kind is bytes
                            else 57 + (len(value) if value.isascii() else 4 * len(value))
                            if kind is str else result_size(value, TAKE_BYTES))
            if total > limit and (k or counted or (self.room is not None
                                                  and total > self.room)):
                self.short = not (k or counted)
                break
            k += 1
        self.total = total
        return k


def replayed_as(args: list[Any], at: int, value: int) -> None:
    """Write ``value`` over ``args[at]`` of a sized take: the op as its object's watchers
    replay it (:meth:`~.state_machine.StateMachine.replay`): ``n`` the count it took (the
    plain rule then takes exactly that many), or a value refused again, with nothing
    taken, when it answered :data:`NO_ROOM`. The log keeps the op as proposed."""
    args[at] = value


def take_budget(per: int, room: int | None = None) -> TakeBudget:
    """The :class:`TakeBudget` of one take, its elements counting ``per`` each besides
    their value."""
    return TakeBudget(per, room)


def claim_budget(worker: Any, room: int | None = None) -> TakeBudget:
    """:func:`take_budget` of a claim by ``worker``: each delivery counts its value, its
    worker and :data:`DELIVERY_ALLOWANCE`."""
    return TakeBudget(DELIVERY_ALLOWANCE + result_size(worker, TAKE_BYTES), room)
