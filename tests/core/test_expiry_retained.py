"""A group's retained deadlines: a sweep's run of expired ids is the one asking each
id's deadline in turn finds, whatever the order of the stamps."""

from __future__ import annotations

import random

import pytest

from lazily_queue.core.expiry_retained import RetainedDeadlines
from lazily_queue.core.stamps import StampIndex


def _one_by_one(deadlines: RetainedDeadlines, first: int, end: int, now: int) -> int:
    at = first
    while at < end and (d := deadlines.get(at)) is not None and now >= d:
        at += 1
    return at - first


def _random_deadlines(rng: random.Random, ascending: bool) -> RetainedDeadlines:
    first, end = rng.randint(0, 5), rng.randint(10, 300)
    stamps, at, stamp = StampIndex(), first, 1_000
    while at < end:
        stamp += rng.randint(0, 40) if ascending else rng.randint(-60, 60)
        stamps.note(at, stamp)
        at += rng.randint(1, 12)
    own_ids = sorted(rng.sample(range(first, end), rng.randint(0, (end - first) // 3)))
    own = [rng.randint(900, 1_600) for _ in own_ids]
    age = rng.choice([None, 50, 300])
    if age is None and not own_ids:
        age = 100
    return RetainedDeadlines(first, end, age, stamps, own_ids, own)


@pytest.mark.parametrize("ascending", [False, True])
@pytest.mark.parametrize("seed", range(40))
def test_an_expired_run_is_what_each_deadline_in_turn_tells(ascending: bool, seed: int) -> None:
    rng = random.Random(seed)
    deadlines = _random_deadlines(rng, ascending)
    held = deadlines.copy()
    low, end = deadlines.to_list()[:2]
    for now in sorted(rng.randint(900, 1_800) for _ in range(30)):
        k = deadlines.expired_run(low, end, now)
        assert k == _one_by_one(held, low, end, now), now
        # as a sweep: the run leaves, then the next id is claimed (or there is none)
        deadlines.forget_below(low + k)
        held.forget_below(low + k)
        low += k
        if low < end and rng.random() < 0.3:
            assert deadlines.pop(low) == held.pop(low)
            low += 1
        if low >= end:
            break


@pytest.mark.parametrize("seed", range(20))
def test_a_document_saying_its_stamps_ascend_when_they_do_not_is_read_by_its_stamps(
        seed: int) -> None:
    rng = random.Random(seed)
    deadlines = _random_deadlines(rng, False)
    doc = deadlines.to_list()
    doc[7] = True  # a document's flag says the stamps ascend; they need not
    restored = RetainedDeadlines.from_list(doc)
    low, end = doc[:2]
    for now in range(900, 1_800, 25):
        assert restored.expired_run(low, end, now) == _one_by_one(deadlines, low, end, now)
