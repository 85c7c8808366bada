"""Topic publishes with options: ``TOPIC_PUBLISH_OPTIONS [name, options, value]``.

``options`` is the map of :meth:`~lazily_queue.core.push_options.PushOptions.to_map`
(only the options given: ``msg_id``, ``headers``, ``ttl_ms``), read strictly: an
unknown key or a wrong type refuses the op (``bad_options``) and changes nothing. The
publish applies as ``TOPIC_PUBLISH`` (limits, retention, groups, events alike), once per
``msg_id`` in the dedup window (one window and key with ``TOPIC_PUBLISH_ONCE``); its
headers are kept by offset as ``TOPIC_PUBLISH_HEADERS`` keeps them, and its TTL becomes
the element's deadline (the entry's stamp plus ``ttl_ms``) in the topic's expiry record
(:mod:`.expiry`; the topic's age limit may end it earlier). The plain publish keeps its
own op.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.headers import OffsetHeaders
from ..errors import shown
from . import expiry, ops, topics
from .dedup import applied_once
from .family import Family, checked_name
from .headers import topic_headers
from .ops import OpRefused
from .options import decode_options

if TYPE_CHECKING:
    from .state_machine import StateMachine


def publish(sm: StateMachine, args: list[Any]) -> Any:
    """The handler (module docstring): the offset, as ``TOPIC_PUBLISH`` answers."""
    if len(args) != 3:
        raise OpRefused("bad_args", "topic_publish_options is [name, options, value]")
    name = checked_name(args[0])
    options = decode_options(ops.TOPIC_PUBLISH_OPTIONS, args[1])
    value = args[2]
    core = sm.topics.get(name)
    if core is None:
        raise OpRefused("unknown_topic", f"topic {shown(name)} has not been declared")

    def apply() -> Any:
        offset = topics.publish(sm, [name, value], options.ttl_ms)
        if options.headers is not None:
            table = topic_headers(sm, name)
            if table is None:
                table = sm.topic_headers[name] = OffsetHeaders(sm.topics[name])
            table.note(offset, options.headers)
        if options.ttl_ms is not None:
            rules = expiry.of(sm, "topic", name, True)
            assert rules is not None
            rules.note(offset, sm.now, options.ttl_ms)
        return offset

    return applied_once(sm, "topic", name, options.msg_id, apply)


FAMILY = Family("topic_options", {ops.TOPIC_PUBLISH_OPTIONS: publish}, ())
