"""Outcome: how a proposal, membership change or leadership transfer ended.

The engine translates PySyncObj's failure codes into these once, so nothing above the
engine depends on the library's names.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable
from typing import Any

from pysyncobj.config import FAIL_REASON


class Outcome(enum.Enum):
    """The answer to a request made to the engine; the value is its name in messages."""

    SUCCESS = "success"
    #: The leader's queue of commands is full; nothing was appended.
    QUEUE_FULL = "queue_full"
    #: No leader is known; nothing was appended.
    MISSING_LEADER = "missing_leader"
    #: The entry was replaced by another leader's; it was not applied.
    DISCARDED = "discarded"
    #: This member is not the leader; nothing was appended.
    NOT_LEADER = "not_leader"
    #: Leadership changed while the entry was in flight; it may still commit.
    LEADER_CHANGED = "leader_changed"
    #: The leader refused the request.
    REQUEST_DENIED = "request_denied"
    #: No answer came back; the entry may still commit.
    UNKNOWN_OUTCOME = "unknown_outcome"
    #: A failure code this version does not know (from a peer); nothing is assumed.
    UNRECOGNISED = "unrecognised"


#: Failures worth retrying: the request may succeed at the next leader or attempt.
RETRYABLE = frozenset({
    Outcome.QUEUE_FULL, Outcome.MISSING_LEADER, Outcome.DISCARDED, Outcome.NOT_LEADER,
    Outcome.LEADER_CHANGED, Outcome.UNKNOWN_OUTCOME,
})
#: Failures after which the entry may still commit.
MAYBE_APPLIED = frozenset({Outcome.LEADER_CHANGED, Outcome.UNKNOWN_OUTCOME})

_FROM_PYSYNCOBJ = {
    FAIL_REASON.SUCCESS: Outcome.SUCCESS,
    FAIL_REASON.QUEUE_FULL: Outcome.QUEUE_FULL,
    FAIL_REASON.MISSING_LEADER: Outcome.MISSING_LEADER,
    FAIL_REASON.DISCARDED: Outcome.DISCARDED,
    FAIL_REASON.NOT_LEADER: Outcome.NOT_LEADER,
    FAIL_REASON.LEADER_CHANGED: Outcome.LEADER_CHANGED,
    FAIL_REASON.REQUEST_DENIED: Outcome.REQUEST_DENIED,
    FAIL_REASON.UNKNOWN_OUTCOME: Outcome.UNKNOWN_OUTCOME,
}


def from_pysyncobj(reason: int) -> Outcome:
    """The outcome of one of PySyncObj's ``FAIL_REASON`` codes."""
    return _FROM_PYSYNCOBJ.get(reason, Outcome.UNRECOGNISED)

#: Called with a request's result (``None`` unless it applied) and its outcome.
Answer = Callable[[Any, Outcome], None]


def translated(callback: Answer) -> Callable[[Any, int], None]:
    """PySyncObj's ``callback(result, fail_reason)`` as ``callback(result, outcome)``."""
    return functools.partial(answered, callback)


def answered(callback: Answer, result: Any, reason: int) -> None:
    """Answer ``callback`` with ``result`` and the outcome of PySyncObj's ``reason``."""
    callback(result, Outcome.SUCCESS if reason == FAIL_REASON.SUCCESS
             else from_pysyncobj(reason))
