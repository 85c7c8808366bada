"""A topic's own expiry and its seeks by time read its stamp points, not its elements: the
results are those of asking each element in turn, whatever the order of the stamps."""

from __future__ import annotations

import random
from typing import Any

import pytest

from lazily_queue.core.expiry import Expiry
from lazily_queue.core.topic import TopicCore
from lazily_queue.core.topic_expiry import (
    age_frontier,
    expired_in,
    is_expired,
    skip_expired,
)


class _Counted(list[int]):
    """A list counting the reads of its items (a bisection reads few)."""

    reads = 0

    def __getitem__(self, key: Any) -> Any:
        _Counted.reads += 1
        return super().__getitem__(key)


def _one_by_one(topic: TopicCore[Any], expiry: Expiry, first: int, now: int) -> int:
    at, end = first, topic.end_offset()
    while at < end and is_expired(topic, expiry, at, now):
        at += 1
    return at


def _topic(rng: random.Random, order: str) -> tuple[TopicCore[Any], Expiry]:
    """A topic with random stamps (ascending, or stepping back as a wall clock may),
    unstamped publishes, own ttls and a head already dropped."""
    topic: TopicCore[Any] = TopicCore()
    expiry = Expiry(rng.choice([None, 40, 300]), rng.choice([None, 60, 500]))
    stamp = 1_000
    for offset in range(rng.randint(0, 400)):
        if rng.random() < 0.2:
            stamp += rng.randint(0, 30) if order == "ascending" else rng.randint(-80, 40)
        given = None if rng.random() < 0.05 else stamp
        topic.publish(offset, given)
        if rng.random() < 0.3:
            expiry.note(offset, topic.stamp_of(offset), rng.randint(1, 700))
    base = rng.randint(0, topic.end_offset())
    topic.drop_before(base)
    expiry.forget_below(base)
    return topic, expiry


@pytest.mark.parametrize("order", ["ascending", "stepping back"])
@pytest.mark.parametrize("seed", range(60))
def test_expiry_by_stamp_points_is_what_each_element_in_turn_tells(order: str,
                                                                     seed: int) -> None:
    rng = random.Random(seed)
    topic, expiry = _topic(rng, order)
    assert topic.stamp_index().ascending() == (
        topic.stamp_index().columns()[1] == sorted(topic.stamp_index().columns()[1]))
    base, end = topic.base_offset(), topic.end_offset()
    for _ in range(20):
        now = rng.randint(900, 2_500)
        assert age_frontier(topic, expiry, now) == _one_by_one(topic, expiry, base, now)
        first = rng.randint(base, end)
        last = rng.randint(first, end)
        assert expired_in(topic, expiry, first, last, now) == frozenset(
            o for o in range(first, last) if is_expired(topic, expiry, o, now))
    cursor = rng.randint(base, end)
    topic.subscribe("s", start=cursor)
    now = rng.randint(900, 2_500)
    target = _one_by_one(topic, expiry, cursor, now)
    assert skip_expired(topic, expiry, "s", now).result == target - cursor
    assert topic.cursor("s") == target
    assert expiry.skipped == target - cursor


def test_the_age_frontier_of_a_long_topic_bisects_its_stamps() -> None:
    topic: TopicCore[Any] = TopicCore()
    for offset in range(20_000):
        topic.publish(offset, 1_000 + offset)
    expiry = Expiry(None, 60_000)
    index = topic.stamp_index()
    index._stamps = _Counted(index._stamps)  # type: ignore[attr-defined]
    _Counted.reads = 0
    assert age_frontier(topic, expiry, 1_000 + 60_000 + 12_345) == 12_346
    assert expired_in(topic, expiry, 19_990, 20_000, 1_000 + 60_000 + 19_995) == frozenset(
        range(19_990, 19_996))
    assert _Counted.reads < 100
