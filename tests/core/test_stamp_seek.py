"""Seeks by time read a few of the stamp points (a bisection when the stamps ascend) and
find the first id stamped at or after the time, whatever the order of the stamps; whether
they ascend is known through every change of the index."""

from __future__ import annotations

import random
from typing import Any

import pytest

from lazily_queue.core.stamps import StampIndex


class _Counted(list[int]):
    """A list counting the reads of its items (a bisection reads few)."""

    reads = 0

    def __getitem__(self, key: Any) -> Any:
        _Counted.reads += 1
        return super().__getitem__(key)


@pytest.mark.parametrize("order", ["ascending", "stepping back"])
@pytest.mark.parametrize("seed", range(60))
def test_a_seek_by_time_is_the_first_id_stamped_at_or_after_it(order: str,
                                                                seed: int) -> None:
    rng = random.Random(seed)
    index, at, stamp = StampIndex(), rng.randint(0, 5), rng.randint(-20, 50)
    top = stamp
    for _ in range(rng.randint(0, 60)):
        stamp += rng.randint(0, 30) if order == "ascending" else rng.randint(-40, 30)
        top = max(top, stamp)
        index.note(at, stamp)
        at += rng.randint(1, 8)
    if rng.random() < 0.5:
        index.forget_below(rng.randint(0, at))
    assert index.ascending() == (index.columns()[1] == sorted(index.columns()[1]))
    for _ in range(40):
        base = rng.randint(0, at + 3)
        end = rng.randint(base, at + 5)
        wanted = rng.randint(-30, top + 40)
        expected = (min(base, end) if wanted <= 0 else next(
            (i for i in range(base, end) if index.stamp_of(i) >= wanted), end))
        assert index.first_at_or_after(wanted, base, end) == expected


def test_a_seek_in_ascending_stamps_is_a_bisection() -> None:
    index = StampIndex()
    for i in range(20_000):
        index.note(i, 1_000 + 2 * i)
    index._stamps = _Counted(index._stamps)  # type: ignore[attr-defined]
    _Counted.reads = 0
    for wanted in (999, 1_000, 1_001, 20_000, 40_998, 40_999):
        assert index.first_at_or_after(wanted, 0, 20_000) == min(
            max(0, (wanted - 999) // 2), 20_000)
    assert _Counted.reads < 6 * 40


@pytest.mark.parametrize("seed", range(20))
def test_whether_stamps_ascend_is_kept_through_every_change(seed: int) -> None:
    rng = random.Random(seed)
    index, at = StampIndex(), 0
    for _ in range(200):
        index.note(at, rng.randint(0, 50))
        at += rng.randint(1, 3)
        if rng.random() < 0.1:
            index.forget_below(rng.randint(0, at))
        for made in (index, index.between(rng.randint(0, at), rng.randint(0, at + 2)),
                     index.below(rng.randint(0, at)), StampIndex.from_points(index.points()),
                     StampIndex.from_columns(index.columns())):
            stamps = made.columns()[1]
            assert made.ascending() == (stamps == sorted(stamps))
    ids = index.columns()[0]
    if ids:
        joined = StampIndex().then(index, ids[len(ids) // 2])
        assert joined.ascending() == (joined.columns()[1] == sorted(joined.columns()[1]))
