"""Seeks by time over stamps that step back bisect their ascending runs: the same answers
as a walk over the points, through notes and trims, reading few of the points."""

from __future__ import annotations

import random
from bisect import bisect_right
from typing import Any

import pytest

from lazily_queue.core.stamp_runs import MaxTree
from lazily_queue.core.stamps import StampIndex
from lazily_queue.core.topic import TopicCore


class _Counted(list[int]):
    """A list counting the reads of its items."""

    reads = 0

    def __getitem__(self, key: Any) -> Any:
        _Counted.reads += 1
        return super().__getitem__(key)


def _walked(index: StampIndex, stamp: int, first: int, end: int) -> int:
    """The first id of ``first..end - 1`` stamped above ``stamp``, by a walk over the
    points after ``first``'s."""
    if first >= end:
        return end
    ids, stamps = index.columns()
    i = bisect_right(ids, first) - 1
    if (stamps[i] if i >= 0 else 0) > stamp:
        return first
    i += 1
    while i < len(ids) and stamps[i] <= stamp:
        i += 1
    return min(ids[i], end) if i < len(ids) else end


@pytest.mark.parametrize("seed", range(40))
def test_a_seek_over_stamps_stepping_back_is_the_walks_answer(seed: int) -> None:
    rng = random.Random(seed)
    index, at, stamp = StampIndex(), 0, 1_000
    back = rng.choice([0.001, 0.05, 0.3, 0.7])  # how often the clock steps back
    for step in range(rng.randint(200, 1_500)):
        stamp += -rng.randint(1, 300) if rng.random() < back else rng.randint(0, 40)
        index.note(at, stamp)
        at += rng.randint(1, 4)
        if rng.random() < 0.02:
            index.forget_below(rng.randint(0, at))
        if step % 7 == 0 or rng.random() < 0.05:
            ids = index.columns()[0]
            low = ids[0] if ids else 0
            for _ in range(6):
                first = rng.randint(max(0, low - 3), at + 2)
                end = rng.randint(first, at + 4)
                wanted = rng.randint(stamp - 2_000, stamp + 300)
                assert index.first_above_in(wanted, first, end) == _walked(
                    index, wanted, first, end)
                assert index.first_at_or_after(wanted, first, end) == (
                    min(first, end) if wanted <= 0 else _walked(index, wanted - 1, first, end))


@pytest.mark.parametrize("seed", range(10))
def test_a_topics_seek_by_time_after_its_clock_stepped_back(seed: int) -> None:
    rng = random.Random(seed)
    topic: TopicCore[int] = TopicCore()
    topic.subscribe("reader", "durable", "head")
    stamp, per_offset = 100_000, []
    for offset in range(3_000):
        if rng.random() < 0.01:
            stamp -= rng.randint(1, 2_000)
        stamp += rng.randint(0, 3)
        topic.publish(offset, stamp)
        per_offset.append(stamp)
        if offset % 500 == 499:
            topic.advance_to("reader", topic.cursor("reader") + rng.randint(0, 400))  # type: ignore[operator]
            topic.gc()
        for wanted in (rng.randint(0, stamp + 10) for _ in range(2)):
            base = topic.base_offset()
            assert topic.offset_at(wanted) == next(
                (o for o in range(base, topic.end_offset()) if per_offset[o] >= wanted),
                topic.end_offset())


def test_a_seek_after_the_clock_stepped_back_reads_few_points() -> None:
    index = StampIndex()
    for i in range(20_000):
        index.note(i, 1_000 + 2 * i - (5_000 if i >= 10_000 else 0))  # one step back
    assert not index.ascending()
    index._stamps = _Counted(index._stamps)  # type: ignore[attr-defined]
    _Counted.reads = 0
    for wanted in (1_000, 20_000, 20_999, 21_000, 37_000, 40_998, 40_999):
        assert index.first_at_or_after(wanted, 0, 20_000) == _walked(
            index, wanted - 1, 0, 20_000)
    walks = _Counted.reads
    _Counted.reads = 0
    for wanted in (1_000, 20_000, 20_999, 21_000, 37_000, 40_998, 40_999):
        index.first_at_or_after(wanted, 0, 20_000)
    assert _Counted.reads < 7 * 60 < walks


@pytest.mark.parametrize("seed", range(20))
def test_a_max_tree_finds_the_first_value_above_a_bound(seed: int) -> None:
    rng = random.Random(seed)
    values = [rng.randint(-50, 50) for _ in range(rng.randint(0, 40))]
    tree = MaxTree(values)
    for _ in range(rng.randint(0, 80)):
        values.append(rng.randint(-50, 50))
        tree.append(values[-1])
        first, bound = rng.randint(0, len(values) + 1), rng.randint(-60, 60)
        assert tree.first_above(first, bound) == next(
            (k for k in range(first, len(values)) if values[k] > bound), len(values))
    assert len(tree) == len(values)
    assert tree.values_from(len(values) // 2) == values[len(values) // 2:]
