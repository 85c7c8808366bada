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


class _CountedKeys(dict[int, int]):
    """A dict counting the keys its iterations hand out."""

    handed = 0

    def __iter__(self) -> Any:
        for key in super().__iter__():
            _CountedKeys.handed += 1
            yield key


def test_a_dropped_head_forgets_its_own_deadlines_not_looking_at_the_others() -> None:
    expiry = Expiry()
    for offset in range(20_000):
        expiry.note(offset, 1_000, 60_000)
    expiry.deadlines = _CountedKeys(expiry.deadlines)
    _CountedKeys.handed = 0
    expiry.forget_below(10)
    expiry.forget_below(10)
    assert list(dict.keys(expiry.deadlines))[:2] == [10, 11]
    assert len(expiry.deadlines) == 19_990
    assert _CountedKeys.handed < 30


@pytest.mark.parametrize("seed", range(40))
def test_forgetting_below_an_id_drops_exactly_the_deadlines_below_it(seed: int) -> None:
    rng = random.Random(seed)
    expiry, held, next_id = Expiry(), {}, 0
    for _ in range(300):
        roll = rng.random()
        if roll < 0.5:
            next_id += rng.randint(1, 3)
            expiry.note(next_id, 1_000, rng.randint(1, 99))
            held[next_id] = expiry.deadlines[next_id]
        elif roll < 0.6 and held:  # taken, then given back: out of order
            key = rng.choice(sorted(held))
            expiry.take(key)
            del held[key]
            if rng.random() < 0.7:
                expiry.give_back(key)
                held[key] = expiry.deadlines[key]
        elif roll < 0.7:
            expiry = Expiry.from_list(expiry.to_list())
        else:
            below = rng.randint(0, next_id + 2)
            expiry.forget_below(below)
            held = {k: v for k, v in held.items() if k >= below}
        assert expiry.deadlines == held
