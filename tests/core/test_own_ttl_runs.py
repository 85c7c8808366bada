"""A run of elements expired by their own ttls is found as each element in turn tells,
from the head or from a cursor, with or without an age limit, and their deadlines leave
with them; a long one at a topic's head is read in order, not looked up element by
element."""

from __future__ import annotations

import random
from typing import Any

import pytest

from lazily_queue.core.expiry import Expiry
from lazily_queue.core.topic import TopicCore
from lazily_queue.core.topic_expiry import age_frontier, is_expired, skip_expired


class _CountedDeadlines(dict[int, int]):
    """Deadlines counting their lookups by id."""

    lookups = 0

    def get(self, key: Any, default: Any = None) -> Any:
        _CountedDeadlines.lookups += 1
        return super().get(key, default)


def _one_by_one(expiry: Expiry, first: int, end: int, now: int) -> int:
    at = first
    while at < end and (found := expiry.deadlines.get(at)) is not None and now >= found:
        at += 1
    return at


def _dense(rng: random.Random, n: int) -> Expiry:
    """Own deadlines for most of ``0..n - 1``, in runs expiring at about one time."""
    expiry = Expiry()
    deadline = 1_000
    for element_id in range(n):
        if rng.random() < 0.01:
            deadline += rng.randint(-300, 400)
        if rng.random() < 0.995:
            expiry.note(element_id, deadline, rng.choice([1, 1, 1, 200]))
    return expiry


@pytest.mark.parametrize("seed", range(40))
def test_a_run_expired_by_own_ttls_ends_where_each_element_tells(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.choice([0, 5, 100, 3_000])
    expiry = _dense(rng, n)
    if rng.random() < 0.3:  # not in order: each id looked up
        expiry.give_back(-1)
        expiry.taken[n // 2] = 1_000
        expiry.forget(n // 2)
        expiry.give_back(n // 2)
    low = rng.randint(0, n)
    kept = {k: v for k, v in expiry.deadlines.items() if k >= low}
    expiry.forget_below(low)
    assert expiry.deadlines == kept
    for _ in range(30):
        first = rng.choice([low, rng.randint(max(0, low - 2), n + 2)])
        end = rng.randint(first, n + 3)
        now = rng.randint(500, 2_500)
        assert expiry.own_run(first, end, now) == _one_by_one(expiry, first, end, now)


@pytest.mark.parametrize("seed", range(30))
def test_a_topics_head_with_own_ttls_leaves_as_each_element_tells(seed: int) -> None:
    rng = random.Random(seed)
    topic: TopicCore[int] = TopicCore()
    expiry = Expiry(None, rng.choice([None, None, 5_000, 100_000]))
    stamp = 1_000
    for offset in range(rng.randint(100, 4_000)):
        stamp += rng.choice([0, 0, 0, 1, 3, -2])
        topic.publish(offset, stamp)
        if rng.random() < 0.97:
            expiry.note(offset, stamp, rng.choice([50, 50, 50, 3_000]))
    topic.drop_before(base := rng.randint(0, 50))
    expiry.forget_below(base)
    topic.subscribe("s", start=rng.randint(base, topic.end_offset()))
    for now in sorted(rng.randint(1_000, 9_000) for _ in range(5)):
        expected = base = topic.base_offset()
        while expected < topic.end_offset() and is_expired(topic, expiry, expected, now):
            expected += 1
        assert age_frontier(topic, expiry, now) == expected
        cursor = topic.cursor("s")
        assert cursor is not None
        target = cursor
        while target < topic.end_offset() and is_expired(topic, expiry, target, now):
            target += 1
        assert skip_expired(topic, expiry, "s", now).result == target - cursor
        topic.drop_before(expected)
        expiry.forget_below(expected)


@pytest.mark.parametrize("age", [None, 86_400_000])
def test_a_long_run_expired_at_a_topics_head_is_read_in_order(age: int | None) -> None:
    topic: TopicCore[int] = TopicCore()
    expiry = Expiry(None, age)
    expiry.deadlines = _CountedDeadlines()
    for offset in range(20_000):
        topic.publish(offset, 1_000 + offset // 100)
        expiry.note(offset, 1_000 + offset // 100, 500)
    _CountedDeadlines.lookups = 0
    assert age_frontier(topic, expiry, 1_000 + 500 + 150) == 15_100
    assert _CountedDeadlines.lookups < 1_000
