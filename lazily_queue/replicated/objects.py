"""One named object of the replicated state, captured and installed on its own.

A member captures a queue, topic or work queue for a client that watches it; the
client installs it in its mirror (a :class:`~.state_machine.StateMachine` holding only
the objects it watches) and then replays the ops the member applies to it. The forms
are those of the object's snapshot section; a consumer group's work queue carries
``"group": true`` (its claims decide expiry at the leader's stamps, see
:func:`.expiry.work_claim`; its feeds replay as pushes).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from ..core.expiry import Expiry
from ..core.fifo import Fifo
from ..core.headers import OffsetHeaders, checked_table
from ..core.limited_fifo import LimitedFifo
from ..core.limited_topic import LimitedTopic
from ..core.limited_work import LimitedWorkQueue
from ..core.limits import Limits
from ..core.topic import TopicCore
from ..core.work import WorkQueueCore
from ..errors import shown
from .group_retake import check_retained
from .receipts import checked_receipt
from .work_queues import WorkState

if TYPE_CHECKING:
    from .state_machine import StateMachine

#: The kinds of named objects.
KINDS = ("queue", "topic", "work_queue")


class Objects(Protocol):
    """Where named objects are read from (a state machine or its read view)."""

    @property
    def queues(self) -> Mapping[str, Fifo[Any]]: ...

    @property
    def topics(self) -> Mapping[str, TopicCore[Any]]: ...

    @property
    def work_queues(self) -> Mapping[str, WorkState]: ...

    @property
    def topic_headers(self) -> Mapping[str, OffsetHeaders]: ...

    @property
    def work_headers(self) -> Mapping[str, OffsetHeaders]: ...

    @property
    def expiry(self) -> Mapping[tuple[str, str], Expiry]: ...


def _headers(tables: Mapping[str, OffsetHeaders], name: str, owner: object) -> list[Any]:
    table = tables.get(name)
    return [] if table is None or table.owner is not owner else table.entries()


def _expiry_of(sm: Objects, kind: str, name: str, runs: bool = True) -> list[Any] | None:
    found = sm.expiry.get((kind, name))
    return None if found is None else found.to_list(runs=runs)


def _install_expiry(sm: StateMachine, kind: str, name: str, doc: Any) -> None:
    if doc is None:
        sm.expiry.pop((kind, name), None)
    else:
        record = Expiry.from_list(doc)
        try:
            check_retained(sm.work_queues, kind, name, record)
        except ValueError as exc:
            raise ValueError(f"{kind} {shown(name)}: expiry: {exc}") from None
        sm.expiry[(kind, name)] = record



def capture(sm: Objects, kind: str, name: str, *, runs: bool = True) -> Any:
    """The object's state as plain data, or ``None`` when it is not declared. Without
    ``runs``, a consumer group's run of retained values and their deadlines are given item
    by item (the form clients of protocol 3 read)."""
    if kind == "queue":
        q = sm.queues.get(name)
        if q is None:
            return None
        doc = [q.capacity(), q.is_closed(), q.elements(), list(q.id_state())]
        limited_doc = None
        if isinstance(q, LimitedFifo):  # optional: [limits, {reason: dropped}]
            limited_doc = [q.limits().doc(), dict(q.quota.dropped)]
        expiry_doc = _expiry_of(sm, kind, name)
        headers = q.headers_state()
        delayed = q.delayed_state()
        if limited_doc is not None or expiry_doc is not None or headers or delayed:
            doc.append(limited_doc)
        if expiry_doc is not None or headers or delayed:  # optional, after the limits
            doc.append(expiry_doc)
        if headers or delayed:  # optional, after the expiry (or None)
            doc.append(headers)
        if delayed:  # optional, after the headers: [[due, id, stamp, value], ...]
            doc.append(delayed)
        return doc
    if kind == "topic":
        t = sm.topics.get(name)
        if t is None:
            return None
        topic_doc: dict[str, Any] = {**t.snapshot(), "stamps": t.stamps(),
                                     "expiry": _expiry_of(sm, kind, name)}
        if isinstance(t, LimitedTopic):  # [limits, {reason: dropped}, {subscriber: gap}]
            topic_doc["limits"] = [t.limits().doc(), dict(t.quota.dropped), dict(t.gaps)]
        if headers := _headers(sm.topic_headers, name, t):  # only when some
            topic_doc["headers"] = headers
        return topic_doc
    if kind == "work_queue":
        w = sm.work_queues.get(name)
        if w is None:
            return None
        work_doc: dict[str, Any] = {"core": w.core.snapshot(run=runs),
                                    "receipts": w.table.rows(),
                                    "stamps": w.core.stamps(),
                                    "expiry": _expiry_of(sm, kind, name, runs)}
        if isinstance(w.core, LimitedWorkQueue):  # optional: [limits, {reason: dropped}]
            work_doc["limits"] = [w.core.limits.doc(), dict(w.core.dropped)]
        if headers := _headers(sm.work_headers, name, w):  # only when some
            work_doc["headers"] = headers
        if w.group is not None or w.mirrored_group:  # a consumer group's (optional)
            work_doc["group"] = True
        return work_doc
    raise ValueError(f"unknown kind of object {shown(kind)}; expected one of {KINDS}")


def install(sm: StateMachine, kind: str, name: str, doc: Any) -> None:
    """Replace the object with ``doc`` (:func:`capture`'s form; ``None`` removes it, its
    headers and expiry with it).

    Raises ``ValueError`` / ``TypeError`` / ``KeyError`` for a malformed ``doc``, with
    the state unchanged. No event is recorded: the caller resets the object's readers.
    """
    if kind == "queue":
        if doc is None:
            sm.queues.pop(name, None)
            sm.expiry.pop((kind, name), None)
        else:
            capacity, closed, elements, *rest = doc
            id_state = (rest[0][0], rest[0][1]) if rest else None
            fifo: Fifo[Any] = Fifo.restored(capacity, list(elements), bool(closed), id_state)
            if len(rest) > 1 and rest[1] is not None:
                limits_doc, dropped = rest[1]
                fifo = LimitedFifo.limited(fifo, Limits.from_doc(limits_doc))
                fifo.quota.dropped = {str(k): int(v) for k, v in dict(dropped).items()}
            if len(rest) > 4:
                fifo.load_delayed(rest[4])
            if len(rest) > 3:
                fifo.load_headers(checked_table(rest[3], f"queue {shown(name)}: headers"))
            sm.queues[name] = fifo
            _install_expiry(sm, kind, name, rest[2] if len(rest) > 2 else None)
    elif kind == "topic":
        if doc is None:
            sm.topics.pop(name, None)
            sm.topic_headers.pop(name, None)
            sm.expiry.pop((kind, name), None)
        else:
            doc = dict(doc)
            stamps = doc.pop("stamps", None)
            headers = doc.pop("headers", None)
            expiry = doc.pop("expiry", None)
            limited = doc.pop("limits", None)
            topic: TopicCore[Any] = TopicCore.from_snapshot(doc)
            topic.load_stamps(stamps)
            if limited is not None:
                limits_doc, dropped, gaps = limited
                topic = LimitedTopic.limited(topic, Limits.from_doc(limits_doc))
                topic.quota.dropped = {str(k): int(v) for k, v in dict(dropped).items()}
                topic.keep_gaps({str(k): int(v) for k, v in dict(gaps).items()})
            sm.topics[name] = topic
            _install_headers(sm.topic_headers, name, topic, headers)
            _install_expiry(sm, kind, name, expiry)
    elif kind == "work_queue":
        if doc is None:
            _forget_receipts(sm, sm.work_queues.pop(name, None))
            sm.work_headers.pop(name, None)
            sm.expiry.pop((kind, name), None)
        else:
            state = WorkState(WorkQueueCore.from_snapshot(doc["core"]))
            state.core.load_stamps(doc.get("stamps"))
            if doc.get("limits") is not None:
                limits_doc, dropped = doc["limits"]
                limited = LimitedWorkQueue.limited(state.core, Limits.from_doc(limits_doc))
                limited.dropped = {str(k): int(v) for k, v in dict(dropped).items()}
                state.core = limited
            receipts = [checked_receipt(r) for r in doc["receipts"]]
            state.mirrored_group = doc.get("group") is True
            expiry = doc.get("expiry")
            record = None if expiry is None else Expiry.from_list(expiry)
            try:  # checked against the queue before anything changes
                if record is not None:
                    check_retained({name: state}, kind, name, record)
            except ValueError as exc:
                raise ValueError(f"work queue {shown(name)}: expiry: {exc}") from None
            _forget_receipts(sm, sm.work_queues.get(name))
            sm.work_queues[name] = state
            for receipt in receipts:  # newest of all
                sm.receipt_ledger.keep(state.table, receipt, len(receipts))
            _install_headers(sm.work_headers, name, state, doc.get("headers"))
            if record is None:
                sm.expiry.pop((kind, name), None)
            else:
                sm.expiry[(kind, name)] = record
    else:
        raise ValueError(f"unknown kind of object {shown(kind)}; expected one of {KINDS}")


def _forget_receipts(sm: StateMachine, state: WorkState | None) -> None:
    if state is not None:
        sm.receipt_ledger.forget(state.table)


def _install_headers(tables: dict[str, OffsetHeaders], name: str, owner: object,
                     doc: Any) -> None:
    tables.pop(name, None)
    if doc:
        table = tables[name] = OffsetHeaders(owner)
        table.load(checked_table(doc, f"{shown(name)}: headers"))
