"""Message headers: queue pushes that carry headers, pops and give-backs that carry them
along (ops ``QUEUE_PUSH_HEADERS``, ``QUEUE_POP_HEADERS``, ``QUEUE_UNPOP_HEADERS``), and
topic publishes with headers (``TOPIC_PUBLISH_HEADERS``), kept by offset until the
element is collected.

Headers live in each queue's side table keyed by message id (:class:`~..core.fifo.Fifo`),
never in the value: plain pops answer exactly what they would without them, and the
headers of what they take leave with it. Snapshot section ``headers``: ``{"queues":
{name: [[id, headers], ...]}, "topics": {name: [[offset, headers], ...]}, "work_queues":
{name: [[item_id, headers], ...]}}``, restored after the queues, topics and work queues
(a snapshot without it has no headers).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core import ids
from ..core.expiry import Expiry
from ..core.fifo import Fifo
from ..core.headers import Headers, OffsetHeaders, check_headers, checked_table
from ..core.queue import POP, QueuePopError
from ..errors import InvalidHeaders, shown
from . import expiry, ops, topics, work_headers
from .dedup import applied_once
from .events import QueueChanged
from .family import Family, Section
from .ops import OpRefused
from .queues import _count, _queue, promote, report_push, take_count, unpop_stamped

if TYPE_CHECKING:
    from .state_machine import StateMachine


def _headers(value: Any) -> Headers:
    try:
        headers = check_headers(value)
    except InvalidHeaders as exc:
        raise OpRefused("bad_headers", str(exc)) from exc
    if headers is None:
        raise OpRefused("bad_headers", "a push with headers needs at least one; push "
                        "without headers instead")
    return headers


def push(sm: StateMachine, args: list[Any]) -> Any:
    """``[name, headers, msg_id | None, value]``: a push whose element keeps ``headers``;
    with a ``msg_id``, deduplicated as ``QUEUE_PUSH_ONCE`` is (one window, one key)."""
    if len(args) != 4:
        raise OpRefused("bad_args", "queue_push_headers is [name, headers, msg_id, value]")
    name, raw, msg_id, value = args
    q = _queue(sm, name)
    headers = _headers(raw)

    def apply() -> Any:
        pre = q.len()
        err = q.push_headers(value, sm.now, headers)
        if err is None:
            report_push(sm, name, q, pre)
        return err

    return applied_once(sm, "queue", name, msg_id, apply)


def topic_headers(sm: StateMachine, name: str) -> OffsetHeaders | None:
    """The live header table of topic ``name`` (``None`` when it has none)."""
    table = sm.topic_headers.get(name)
    if table is None:
        return None
    core = sm.topics.get(name)
    if core is None or table.owner is not core:  # deleted (maybe declared again) since
        del sm.topic_headers[name]
        return None
    table.forget_below(core.base_offset())
    return table


def publish(sm: StateMachine, args: list[Any]) -> Any:
    """``[name, headers, msg_id | None, value]``: a publish whose element keeps
    ``headers`` by its offset; with a ``msg_id``, deduplicated as
    ``TOPIC_PUBLISH_ONCE`` is."""
    if len(args) != 4:
        raise OpRefused("bad_args", "topic_publish_headers is [name, headers, msg_id, value]")
    name, raw, msg_id, value = args
    headers = _headers(raw)
    core = sm.topics.get(name) if isinstance(name, str) else None
    if core is None:
        raise OpRefused("unknown_topic", f"topic {shown(name)} has not been declared")

    def apply() -> Any:
        offset = topics.publish(sm, [name, value])
        table = topic_headers(sm, name)
        if table is None:
            table = sm.topic_headers[name] = OffsetHeaders(core)
        table.note(offset, headers)
        return offset

    return applied_once(sm, "topic", name, msg_id, apply)


def push_work(sm: StateMachine, args: list[Any]) -> Any:
    """``[name, headers, msg_id | None, value]``: see :mod:`.work_headers`."""
    if len(args) != 4:
        raise OpRefused("bad_args", "work_push_headers is [name, headers, msg_id, value]")
    return work_headers.push(sm, args, _headers(args[1]))


def pop(sm: StateMachine, args: list[Any]) -> Any:
    """``[values, runs, [[id, headers], ...]]`` of up to ``n`` elements; an empty queue
    answers as ``pop``."""
    q = _queue(sm, args[0])
    n = _count(args[1])
    if q.delayed_len():
        promote(sm, args[0], q)
    n = take_count(sm, q, n, args)
    if sm.expiry and (rules := expiry.of(sm, "queue", args[0])) is not None:
        return _pop_live(sm, args[0], q, rules, n)
    pre = q.len()
    result = q.pop_headers(n)
    if isinstance(result, QueuePopError):
        return result
    values, runs, headers = result
    for i in range(len(values)):
        sm.emit(QueueChanged(args[0], POP, pre - i))
    return [values, runs, headers]


def _pop_live(sm: StateMachine, name: str, q: Fifo[Any], rules: Expiry, n: int) -> Any:
    """A pop with headers on a queue with expiry: live elements only, as
    ``QUEUE_POP_STAMPED`` takes them, with the headers of those taken."""
    taken: dict[int, Headers] = {}
    result = expiry.queue_take(sm, name, q, rules, n, True, taken)
    if isinstance(result, QueuePopError):
        return result
    values, runs = result
    return [values, runs, [[i, taken[i]] for i, _ in ids.expand(runs) if i in taken]]


def unpop(sm: StateMachine, args: list[Any]) -> Any:
    return unpop_stamped(sm, args, with_headers=True)


def _fresh(entries: list[list[Any]]) -> list[list[Any]]:
    """``[[key, headers], ...]`` with copies of the header maps: the capture is encoded
    on another thread while the state machine goes on."""
    return [[key, dict(headers)] for key, headers in entries]


def _capture(sm: StateMachine) -> dict[str, Any] | None:
    doc: dict[str, Any] = {}
    queues = {name: _fresh(table) for name, q in sm.queues.items()
              if q.holds_headers() and (table := q.headers_state())}
    if queues:
        doc["queues"] = queues
    topics_ = {name: _fresh(offsets.entries()) for name in list(sm.topic_headers)
               if (offsets := topic_headers(sm, name)) is not None and len(offsets)}
    if topics_:
        doc["topics"] = topics_
    works = {name: _fresh(entries) for name, entries in work_headers.capture(sm).items()}
    if works:
        doc["work_queues"] = works
    return doc or None


def _restore(sm: StateMachine, doc: Any) -> None:
    if doc is None:
        return
    if not isinstance(doc, dict) or not all(isinstance(doc.get(k, {}), dict)
                                            for k in ("queues", "topics", "work_queues")):
        raise ValueError("snapshot section 'headers' must be {'queues': {name: [[id, "
                         "headers], ...]}, 'topics': {name: [[offset, headers], ...]}}")
    for name, table in doc.get("queues", {}).items():
        q = sm.queues.get(name)
        if q is not None:
            q.load_headers(checked_table(table, f"snapshot section 'headers': queue {shown(name)}"))
    sm.topic_headers = {}
    for name, table in doc.get("topics", {}).items():
        core = sm.topics.get(name)
        if core is not None:
            entries = sm.topic_headers[name] = OffsetHeaders(core)
            entries.load(checked_table(table, f"snapshot section 'headers': topic {shown(name)}"))
    work_headers.restore(sm, doc.get("work_queues", {}))


FAMILY = Family("headers", {
    ops.QUEUE_PUSH_HEADERS: push,
    ops.QUEUE_POP_HEADERS: pop,
    ops.QUEUE_UNPOP_HEADERS: unpop,
    ops.TOPIC_PUBLISH_HEADERS: publish,
    ops.WORK_PUSH_HEADERS: push_work,
}, (Section("headers", _capture, _restore),))
