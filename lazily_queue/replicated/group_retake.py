"""A consumer group restored from a snapshot listing its items one by one (the form of
a snapshot written before a group's run of retained values had one of its own) takes
its topic's elements as a run again, so that the snapshots it writes from then on hold
them once, as a group declared at the head does.

Only a snapshot group entry without ``topic_log`` is of that form (a later snapshot
says ``topic_log`` true or false for every group). Its longest stretch of pending items
that were never delivered, with consecutive ids inside its topic's retained range and
values encoding as the topic's elements at those offsets do (:func:`~..raft.values.dumps`:
equal values of the same types), becomes the run (:func:`retaken_core`); their
deadlines, when each is the one its topic's rules give it, become the run's
(:func:`retake_deadlines`). A group holding anything else is restored as it is listed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import cbor2

from ..core.expiry_retained import RetainedDeadlines
from ..core.topic import TopicCore
from ..raft import values

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..core.expiry import Expiry
    from .state_machine import StateMachine
    from .work_queues import WorkState

_ITEM_KEYS = {"item_id", "value", "attempts"}
#: Values compared by one encoding of each side.
_CHUNK = 4096


def retaken_core(topic: TopicCore[Any] | None, raw: Any) -> tuple[Any, tuple[int, int] | None]:
    """``(core, span)``: the work-queue snapshot of the group entry ``raw`` with its
    stretch of ``topic``'s elements as a run (values left to the topic) and that run's
    ids ``(first, end)``; ``raw["core"]`` and ``None`` when it has none or is of the
    later form. Nothing is checked here that restoring the result does not check."""
    core = raw.get("core")
    if ("topic_log" in raw or topic is None or raw.get("group") is None
            or type(core) is not dict or "run" in core or type(core.get("pending")) is not list):
        return core, None
    pending: list[Any] = core["pending"]
    at, count = _longest_stretch(pending, topic.base_offset(), topic.end_offset())
    if count == 0:
        return core, None
    first = pending[at]["item_id"]
    if not _same_values([r["value"] for r in pending[at:at + count]],
                        topic.elements_between(first, first + count)):
        return core, None
    retaken = {**core, "pending": pending[:at] + pending[at + count:],
               "run": [at, first, count, []]}
    return retaken, (first, first + count)


def _longest_stretch(pending: list[Any], base: int, end: int) -> tuple[int, int]:
    """``(index, length)`` of the longest stretch of ``pending`` records that are
    never-delivered items of consecutive ids in ``base..end - 1``."""
    best = (0, 0)
    i, n = 0, len(pending)
    while i < n:
        j, expect = i, -1
        while j < n:
            rec = pending[j]
            if (type(rec) is not dict or rec.keys() != _ITEM_KEYS
                    or type(rec["attempts"]) is not int or rec["attempts"] != 0
                    or type(item := rec["item_id"]) is not int
                    or not (base <= item < end if expect < 0 else item == expect < end)):
                break
            expect = item + 1
            j += 1
        if j - i > best[1]:
            best = (i, j - i)
        i = max(j, i + 1)
    return best


def _same_values(listed: list[Any], held: list[Any]) -> bool:
    """Whether each of ``listed`` encodes as the one of ``held`` at its place (an equal
    value of the same types), compared a chunk of each at a time."""
    try:
        return len(listed) == len(held) and all(
            values.dumps(listed[i:i + _CHUNK]) == values.dumps(held[i:i + _CHUNK])
            for i in range(0, len(listed), _CHUNK))
    except (TypeError, ValueError, cbor2.CBOREncodeError):
        return False  # not of the value model: not known to be the same


def retake_deadlines(sm: StateMachine) -> None:
    """After the expiry records are restored: each group whose run was retaken
    (:func:`retaken_core`) takes its run's deadlines as the run's when every id of the
    run has, listed, exactly the deadline its topic's rules give it (none listed when
    they give none)."""
    for name, state in sm.work_queues.items():
        span, state.retaken = state.retaken, None
        record = sm.expiry.get(("work_queue", name))
        if span is None or state.group is None or record is None or (
                record.retained is not None):
            continue
        topic = sm.topics.get(state.group[0])
        rules = sm.expiry.get(("topic", state.group[0]))
        if topic is None or rules is None:
            continue
        first, end = span
        candidate = RetainedDeadlines.of(topic, rules, first, end)
        listed = sorted([k, v] for k, v in record.deadlines.items() if first <= k < end)
        if candidate is None or listed != candidate.pairs():
            continue
        for key, _ in listed:
            del record.deadlines[key]
        record.retained = candidate


def check_retained(work_queues: Mapping[str, WorkState], kind: str, name: str,
                   record: Expiry) -> None:
    """``ValueError`` when ``record`` (of the object ``kind`` ``name``) holds retained
    deadlines but is not a work queue's, or holds ids the queue never gave or more ids
    than it holds items."""
    retained = record.retained
    if retained is None:
        return
    state = work_queues.get(name) if kind == "work_queue" else None
    if state is None:
        raise ValueError("retained deadlines belong to a consumer group's work queue, "
                         "and no work queue of that name is restored")
    core = state.core
    retained.check_below(core.next_ids()[0])
    retained.check_held_by(core.pending_len() + core.delayed_len() + core.in_flight_len()
                           + core.dead_letter_len())
