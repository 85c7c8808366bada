"""Topic operations: the local ``TopicCore`` applied on every replica, in log order."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..core.limited_topic import LimitedTopic
from ..core.topic import Durability, SubscribeOutcome, TopicCore, TopicTransition
from ..core.topic_expiry import skip_expired
from ..errors import LimitExceeded, OffsetOutOfRange, shown
from . import expiry, groups, ops
from .events import TopicChanged, TopicPublished
from .family import Family, Handler, Section, checked_name, stamps_section
from .ops import OpRefused

if TYPE_CHECKING:
    from .state_machine import StateMachine


def _topic(sm: StateMachine, args: list[Any]) -> tuple[str, TopicCore[Any]]:
    name = checked_name(args[0])
    topic = sm.topics.get(name)
    if topic is None:
        raise OpRefused("unknown_topic", f"topic {shown(name)} has not been declared")
    return name, topic


def _changed(sm: StateMachine, name: str, invalidated: frozenset[str]) -> None:
    if invalidated:
        sm.emit(TopicChanged(name, invalidated))


def declare(sm: StateMachine, args: list[Any]) -> Any:
    name = checked_name(args[0])
    if name not in sm.topics:
        sm.topics[name] = TopicCore()
    return None


def _topic_op(op: Callable[[TopicCore[Any], list[Any]], TopicTransition[Any]]) -> Handler:
    """A handler running ``op(topic, args)`` on the named topic and emitting its readers."""

    def apply(sm: StateMachine, args: list[Any]) -> Any:
        name, topic = _topic(sm, args)
        result, invalidated = op(topic, args)
        _changed(sm, name, invalidated)
        return result.name if isinstance(result, SubscribeOutcome) else result

    return apply


def _ranged(op: Callable[[TopicCore[Any], list[Any]], TopicTransition[Any]]) -> Handler:
    """A handler for an op naming a position: ``["ok", result]``, or
    ``["out_of_range", offset, base, end]`` when the position is outside the retained
    range at apply time (nothing changes)."""

    def apply(sm: StateMachine, args: list[Any]) -> Any:
        name, topic = _topic(sm, args)
        try:
            result, invalidated = op(topic, args)
        except OffsetOutOfRange as exc:
            return ["out_of_range", exc.offset, exc.base, exc.end]
        except (TypeError, ValueError) as exc:
            raise OpRefused("bad_args", str(exc)) from exc
        _changed(sm, name, invalidated)
        return ["ok", result.name if isinstance(result, SubscribeOutcome) else result]

    return apply


def publish(sm: StateMachine, args: list[Any], ttl_ms: int | None = None) -> Any:
    """Drop what expired at the entry's stamp, then append (expiry makes room before the
    limits judge); returns the offset. ``ttl_ms``: the element's own TTL, which the
    caller notes on the topic; its groups take the deadline as they are fed."""
    name, topic = _topic(sm, args)
    if sm.expiry and (rules := expiry.of(sm, "topic", name)) is not None:
        expiry.expire_topic(sm, name, topic, rules)
    try:
        offset, invalidated = topic.publish(args[1], sm.now)
    except LimitExceeded as exc:  # the limits refuse it (reject, max_bytes): no change
        raise OpRefused("full", f"topic {shown(name)}: {exc}") from None
    sm.emit(TopicPublished(name, offset))
    groups.feed(sm, name, args[1], ttl_ms)
    if invalidated or isinstance(topic, LimitedTopic):  # a limited one: its quota moved
        sm.emit(TopicChanged(name, invalidated))
    return offset


def _stamp(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise OpRefused("bad_args", f"a replay time is a stamp (int ms), got {shown(value)}")
    return value


def _subscribe_at_time(topic: TopicCore[Any], args: list[Any]) -> TopicTransition[Any]:
    return topic.subscribe(args[1], Durability(args[2]), topic.offset_at(_stamp(args[3])))


def _seek_time(topic: TopicCore[Any], args: list[Any]) -> TopicTransition[Any]:
    return topic.seek(args[1], topic.offset_at(_stamp(args[2])))


def gc(sm: StateMachine, args: list[Any]) -> Any:
    """Collect what every durable cursor read, then what is past the age limit; returns
    how many elements left. A topic with limits reports any removal (its quota moved)."""
    name, topic = _topic(sm, args)
    removed, invalidated = topic.gc()
    if invalidated or (removed and isinstance(topic, LimitedTopic)):
        sm.emit(TopicChanged(name, invalidated))
    if sm.expiry and (rules := expiry.of(sm, "topic", name)) is not None:
        rules.forget_below(topic.base_offset())
        removed += expiry.expire_topic(sm, name, topic, rules)
    return removed


def advance(sm: StateMachine, args: list[Any]) -> Any:
    """Consume the element at the cursor; on a topic with expiry, the expired elements
    at the cursor are skipped first (never handed out)."""
    name, topic = _topic(sm, args)
    skipped: frozenset[str] = frozenset()
    if sm.expiry and (rules := expiry.of(sm, "topic", name)) is not None:
        skipped = skip_expired(topic, rules, args[1], sm.now).invalidated
    value, invalidated = topic.advance(args[1])
    _changed(sm, name, invalidated | skipped)
    return value


def restore(sm: StateMachine, args: list[Any]) -> Any:
    name = checked_name(args[0])
    try:
        restored: TopicCore[Any] = TopicCore.from_snapshot(args[1])
    except (TypeError, ValueError) as exc:
        raise OpRefused("bad_snapshot", str(exc)) from exc
    old = sm.topics.get(name)
    if isinstance(old, LimitedTopic):  # restoring keeps the retention limits and counts
        limited = LimitedTopic.limited(restored, old.limits())
        limited.quota.dropped = old.quota.dropped
        limited.keep_gaps(old.gaps)
        restored = limited
    sm.topics[name] = restored
    if sm.expiry and (rules := expiry.of(sm, "topic", name)) is not None:
        rules.clear_deadlines()  # the per-message deadlines were the old elements'
    ids = set(restored.subscriptions())
    if old is not None:
        ids.update(old.subscriptions())
    _changed(sm, name, frozenset(ids))
    return None


def _capture(sm: StateMachine) -> dict[str, Any]:
    return {name: t.snapshot() for name, t in sm.topics.items()}


def _restore(sm: StateMachine, doc: Any) -> None:
    sm.topics = {str(n): TopicCore.from_snapshot(s) for n, s in (doc or {}).items()}


FAMILY = Family(
    "topics",
    {
        ops.TOPIC_DECLARE: declare,
        ops.TOPIC_PUBLISH: publish,
        ops.TOPIC_SUBSCRIBE: _topic_op(lambda t, a: t.subscribe(a[1], Durability(a[2]))),
        ops.TOPIC_RECONNECT: _topic_op(lambda t, a: t.reconnect(a[1])),
        ops.TOPIC_DISCONNECT: _topic_op(lambda t, a: t.disconnect(a[1])),
        ops.TOPIC_DELETE_SUBSCRIBER: _topic_op(lambda t, a: t.delete_subscriber(a[1])),
        ops.TOPIC_ADVANCE: advance,
        ops.TOPIC_GC: gc,
        ops.TOPIC_RESTORE: restore,
        ops.TOPIC_ADVANCE_TO: _topic_op(lambda t, a: t.advance_to(a[1], a[2])),
        ops.TOPIC_SUBSCRIBE_AT: _ranged(lambda t, a: t.subscribe(a[1], Durability(a[2]), a[3])),
        ops.TOPIC_SEEK: _ranged(lambda t, a: t.seek(a[1], a[2])),
        ops.TOPIC_SUBSCRIBE_AT_TIME: _ranged(_subscribe_at_time),
        ops.TOPIC_SEEK_TIME: _ranged(_seek_time),
    },
    (Section("topics", _capture, _restore),
     stamps_section("topic_stamps", "topic", lambda sm: sm.topics)),
)
