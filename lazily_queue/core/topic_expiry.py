"""Expiry of a topic's elements at an explicit ``now`` (ms): the topic's age limit and
each element's own TTL, whichever ends first.

An element published at stamp ``s`` has the deadline ``min(s + ttl, s + age)`` where
``ttl`` is its own TTL (a per-message ``ttl``, kept by offset in
:attr:`~.expiry.Expiry.deadlines`) and ``age`` the smaller of the topic's ``ttl`` and
``max_age``; either may be absent. It is *expired* from the first ``now >= deadline``.

- At the head, expired elements leave (:func:`age_frontier`): at each publish, GC and
  sweep, read or not.
- Behind a live head an expired element stays in the log until it reaches the head,
  but a take never hands it out: a subscriber's take first moves its cursor past the
  expired elements at it (:func:`skip_expired`), and a batch read leaves them out
  (:func:`expired_in`).
"""

from __future__ import annotations

from typing import Any

from .expiry import Expiry
from .topic import NOBODY, TopicCore, TopicTransition


def _age(expiry: Expiry) -> int | None:
    limits = [v for v in (expiry.default_ms, expiry.max_age_ms) if v is not None]
    return min(limits) if limits else None


def deadline(topic: TopicCore[Any], expiry: Expiry, offset: int) -> int | None:
    """When the element at ``offset`` expires (ms), or ``None`` when it never does."""
    own = expiry.deadlines.get(offset) if expiry.deadlines else None
    age = _age(expiry)
    by_age = None if age is None else topic.stamp_of(offset) + age
    if own is None:
        return by_age
    return own if by_age is None else min(own, by_age)


def is_expired(topic: TopicCore[Any], expiry: Expiry, offset: int, now: int) -> bool:
    found = deadline(topic, expiry, offset)
    return found is not None and now >= found


def age_frontier(topic: TopicCore[Any], expiry: Expiry, now: int) -> int:
    """The first offset of ``topic`` that has not expired at ``now`` scanning from the
    head (its base when the head is live)."""
    offset = topic.base_offset()
    if _age(expiry) is None and not expiry.deadlines:
        return offset
    end = topic.end_offset()
    while offset < end and is_expired(topic, expiry, offset, now):
        offset += 1
    return offset


def expiring_at_head(topic: TopicCore[Any], expiry: Expiry | None, now: int) -> int:
    """How many elements at the head of ``topic`` have expired at ``now`` (what the next
    publish drops before it appends)."""
    return 0 if expiry is None else age_frontier(topic, expiry, now) - topic.base_offset()


def skip_expired(topic: TopicCore[Any], expiry: Expiry, subscriber: str,
                 now: int) -> TopicTransition[int]:
    """Move a connected subscriber's cursor past the expired elements at it (counted in
    ``expiry.skipped``); returns how many it skipped."""
    cursor = topic.cursor(subscriber)
    if cursor is None or (_age(expiry) is None and not expiry.deadlines):
        return TopicTransition(0, NOBODY)
    end, target = topic.end_offset(), cursor
    while target < end and is_expired(topic, expiry, target, now):
        target += 1
    if target == cursor:
        return TopicTransition(0, NOBODY)
    moved, invalidated = topic.advance_to(subscriber, target)
    if moved is None:
        return TopicTransition(0, NOBODY)
    expiry.skipped += target - cursor
    return TopicTransition(target - cursor, invalidated)


def expired_in(topic: TopicCore[Any], expiry: Expiry, first: int, end: int,
               now: int) -> frozenset[int]:
    """The offsets in ``first..end-1`` expired at ``now`` (a batch read leaves them out)."""
    if _age(expiry) is None and not expiry.deadlines:
        return frozenset()
    return frozenset(o for o in range(first, end) if is_expired(topic, expiry, o, now))
