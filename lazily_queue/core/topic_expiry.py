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

None of these looks at the elements one by one: an element is expired by age when its
stamp is at most ``now - age``, so a run of them is found on the topic's stamp points (a
bisection when the stamps ascend, as a replicated topic's do; else a bisection of
their ascending runs, as a local topic's wall clock may step back), and the elements
with a TTL of their own that age spares are looked up in spans, each span in one
``map`` (the cost of a run leaving is a few machine steps per element, not a Python
loop's).
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


def expired_run(topic: TopicCore[Any], expiry: Expiry, first: int, end: int,
                now: int) -> int:
    """The first offset of ``first..end - 1`` not expired at ``now`` (``end`` when all
    are): the end of the run of expired elements from ``first``."""
    age, own = _age(expiry), expiry.deadlines
    if age is None:
        return expiry.own_run(first, end, now)
    stamps = topic.stamp_index()
    ascending = stamps.ascending()
    at = first
    while at < end:
        at = stamps.first_above_in(now - age, at, end, ascending)
        spared = expiry.own_run(at, end, now) if own else at
        if spared == at:
            break
        at = spared  # spared by age, not by their own ttls
    return at


def age_frontier(topic: TopicCore[Any], expiry: Expiry, now: int) -> int:
    """The first offset of ``topic`` that has not expired at ``now`` scanning from the
    head (its base when the head is live)."""
    offset = topic.base_offset()
    if _age(expiry) is None and not expiry.deadlines:
        return offset
    return expired_run(topic, expiry, offset, topic.end_offset(), now)


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
    target = expired_run(topic, expiry, cursor, topic.end_offset(), now)
    if target == cursor:
        return TopicTransition(0, NOBODY)
    moved, invalidated = topic.advance_to(subscriber, target)
    if moved is None:
        return TopicTransition(0, NOBODY)
    expiry.skipped += target - cursor
    return TopicTransition(target - cursor, invalidated)


def expired_in(topic: TopicCore[Any], expiry: Expiry, first: int, end: int,
               now: int) -> frozenset[int]:
    """The offsets in ``first..end-1`` expired at ``now`` (a batch read leaves them out):
    the ids of each stamp point at most ``now - age``, then those of their own TTL."""
    age, own = _age(expiry), expiry.deadlines
    if (age is None and not own) or first >= end:
        return frozenset()
    out: set[int] = set()
    if age is not None:
        ids, stamps = topic.stamps_between(first, end).columns()
        for a, b, stamp in zip(ids, [*ids[1:], end], stamps, strict=True):
            if stamp <= now - age:
                out.update(range(a, b))
    if own:
        if len(own) < end - first:
            out.update(o for o, found in own.items() if first <= o < end and now >= found)
        else:
            out.update(o for o in range(first, end)
                       if (found := own.get(o)) is not None and now >= found)
    return frozenset(out)
