"""The per-message options of a work-queue push, checked once, combined freely.

A push may carry any of: a producer ``msg_id`` (applied once in the dedup window),
``headers``, a ``ttl``, a ``priority`` and a due time (``delay`` or ``not_before``).
:func:`work_options` checks them all (the existing typed errors: ``InvalidMessageId``,
``InvalidHeaders``, ``InvalidTtl``, ``InvalidSchedule``) before anything is applied or
proposed and answers one :class:`WorkPushOptions` record (``None`` for a plain push).

How they combine (the same on every backend):

- the item is committed at once with its id, headers, priority and due time;
- a TTL counts from the push, delayed or not (the message's lifetime since its
  producer sent it, as a cell's default TTL counts): a delay does not extend it, so a
  delayed item is offered for ``ttl - delay`` and one whose TTL ends before it is due
  expires undelivered (give ``ttl = delay + window`` to offer it for ``window``);
- priority applies once the item is due; a repeat of a ``msg_id`` still in the window
  adds nothing (whatever its other options) and answers the first ``item_id``.

On the replicated log the options travel as one map (:meth:`WorkPushOptions.to_doc`,
times in the backend's unit), decoded strictly by :func:`options_from_doc`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .dedup import check_msg_id
from .expiry import checked_ms, ttl_ms
from .headers import Headers, check_headers
from .scheduling import MAX_PRIORITY, check_priority, check_when

#: The keys an options map may carry on the log.
DOC_KEYS = frozenset({"msg_id", "headers", "ttl_ms", "priority", "delay", "not_before", "now"})


@dataclass(frozen=True, slots=True)
class WorkPushOptions:
    """A push's checked options: ``delay`` in seconds, ``not_before`` in seconds since
    the Unix epoch, ``ttl_ms`` in milliseconds (``None`` / 0: not given)."""

    msg_id: str | None = None
    headers: Headers | None = None
    ttl_ms: int | None = None
    priority: int = 0
    delay: float | None = None
    not_before: float | None = None

    @property
    def timed(self) -> bool:
        """Whether the push has a due time (``delay`` or ``not_before``)."""
        return self.delay is not None or self.not_before is not None

    @property
    def scheduled(self) -> bool:
        return self.priority != 0 or self.timed

    def given(self) -> list[str]:
        """The names of the options given, in a fixed order."""
        return [name for name, on in (
            ("msg_id", self.msg_id is not None), ("headers", self.headers is not None),
            ("ttl", self.ttl_ms is not None), ("priority", self.priority != 0),
            ("delay", self.delay is not None), ("not_before", self.not_before is not None),
        ) if on]

    def due(self, now: float) -> float | None:
        """The due time of a push at ``now`` (the unit of ``now``: seconds here; the
        replicated map carries it already scaled), ``None`` when not delayed."""
        if self.delay is not None:
            return now + self.delay
        return self.not_before

    def to_doc(self, unit: float, now: float | None) -> dict[str, Any]:
        """The log's options map: only the options given, times scaled by ``unit``
        (1000: milliseconds) and rounded; ``now`` (the time a delay or TTL counts
        from; ``None``: the leader's stamp) when given."""
        doc: dict[str, Any] = {}
        if self.msg_id is not None:
            doc["msg_id"] = self.msg_id
        if self.headers is not None:
            doc["headers"] = self.headers
        if self.ttl_ms is not None:
            doc["ttl_ms"] = self.ttl_ms
        if self.priority:
            doc["priority"] = self.priority
        if self.delay is not None:
            doc["delay"] = round(self.delay * unit)
        if self.not_before is not None:
            doc["not_before"] = round(self.not_before * unit)
        if now is not None:
            doc["now"] = now
        return doc


def work_options(*, msg_id: object = None, headers: object = None, ttl: object = None,
                 priority: object = 0, delay: object = None,
                 not_before: datetime | None = None) -> WorkPushOptions | None:
    """The checked options of a push (``None``: a plain push; empty headers count as
    none)."""
    checked_headers = check_headers(headers) if headers is not None else None
    if (msg_id is None and checked_headers is None and ttl is None and priority == 0
            and delay is None and not_before is None):
        return None
    wait, at = check_when(delay, not_before)
    return WorkPushOptions(
        msg_id=None if msg_id is None else check_msg_id(msg_id),
        headers=checked_headers,
        ttl_ms=None if ttl is None else ttl_ms(ttl),
        priority=check_priority(priority),
        delay=wait, not_before=at)


def _number(doc: dict[str, Any], key: str) -> int | None:
    value = doc.get(key)
    if value is None:
        return None
    if type(value) is not int or value < 0:
        raise ValueError(f"option {key} must be an int >= 0, not {str(value)[:40]}")
    return value


def options_from_doc(doc: Any) -> tuple[WorkPushOptions, int | None]:
    """A log's options map back as ``(options, now)`` (times left in the log's unit:
    ``delay`` and ``not_before`` as given); ``ValueError`` naming the first problem
    (not a map, an unknown key, a wrong type or range)."""
    if type(doc) is not dict:
        raise ValueError(f"push options must be a map, not {type(doc).__name__}")
    unknown = set(doc) - DOC_KEYS
    if unknown:
        raise ValueError(f"unknown push option {sorted(map(str, unknown))[0]!r}; known: "
                         f"{', '.join(sorted(DOC_KEYS))}")
    try:
        msg_id = None if doc.get("msg_id") is None else check_msg_id(doc["msg_id"])
        headers = None
        if "headers" in doc:
            headers = check_headers(doc["headers"])
            if headers is None:
                raise ValueError("option headers must hold at least one header")
        priority = doc.get("priority", 0)
        if type(priority) is not int or not 0 <= priority <= MAX_PRIORITY:
            raise ValueError(f"option priority must be an int 0..{MAX_PRIORITY}")
        ttl = checked_ms(doc.get("ttl_ms"), "option ttl_ms")
    except (TypeError, ValueError) as exc:  # the typed errors are ValueErrors too
        raise ValueError(str(exc)) from None
    delay, not_before, now = (_number(doc, "delay"), _number(doc, "not_before"),
                              _number(doc, "now"))
    if delay is not None and not_before is not None:
        raise ValueError("give option delay or not_before, not both")
    return WorkPushOptions(msg_id, headers, ttl, priority,
                           None if delay is None else float(delay),
                           None if not_before is None else float(not_before)), now
