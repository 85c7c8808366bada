"""A group's retained deadlines: a sweep's run of expired ids is the one asking each
id's deadline in turn finds, whatever the order of the stamps."""

from __future__ import annotations

import random
from typing import Any

import pytest

from lazily_queue.core.expiry_retained import RetainedDeadlines
from lazily_queue.core.stamps import StampIndex


def _one_by_one(deadlines: RetainedDeadlines, first: int, end: int, now: int) -> int:
    at = first
    while at < end and (d := deadlines.get(at)) is not None and now >= d:
        at += 1
    return at - first


def _listed(rng: random.Random, ascending: bool) -> list[Any]:
    """Random retained deadlines in the form listing the own deadlines one by one."""
    first, end = rng.randint(0, 5), rng.randint(10, 300)
    stamps, at, stamp = StampIndex(), first, 1_000
    while at < end:
        stamp += rng.randint(0, 40) if ascending else rng.randint(-60, 60)
        stamps.note(at, stamp)
        at += rng.randint(1, 12)
    own_ids = sorted(rng.sample(range(first, end), rng.randint(0, (end - first) // 3)))
    own = [rng.randint(900, 1_600) for _ in own_ids]
    if rng.random() < 0.3:  # one ttl for a stretch of them, as a producer's
        own_ids = list(range(first + 3, min(end, first + 90)))
        own = [stamps.stamp_of(i) + 70 for i in own_ids]
    age = rng.choice([None, 50, 300])
    if age is None and not own_ids:
        age = 100
    return [first, end, age, [], own_ids, own, stamps.columns(), stamps.ascending()]


def _by_dict(doc: list[Any]) -> dict[int, int]:
    """The deadline of each id of a listed form, as the topic gave it."""
    first, end, age, _, own_ids, own, columns, _ = doc
    stamps, own_of = StampIndex.from_columns(columns), dict(zip(own_ids, own, strict=True))
    out = {}
    for i in range(first, end):
        found = [d for d in (own_of.get(i), None if age is None else stamps.stamp_of(i) + age)
                 if d is not None]
        if found:
            out[i] = min(found)
    return out


@pytest.mark.parametrize("ascending", [False, True])
@pytest.mark.parametrize("seed", range(40))
def test_an_expired_run_is_what_each_deadline_in_turn_tells(ascending: bool, seed: int) -> None:
    rng = random.Random(seed)
    doc = _listed(rng, ascending)
    deadlines = RetainedDeadlines.from_list(doc)
    assert {i: deadlines.get(i) for i in range(doc[0], doc[1])
            if deadlines.get(i) is not None} == _by_dict(doc)
    held = deadlines.copy()
    low, end = doc[:2]
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


@pytest.mark.parametrize("seed", range(40))
def test_the_snapshot_form_keeps_each_deadline_held(seed: int) -> None:
    rng = random.Random(seed)
    doc = _listed(rng, seed % 2 == 0)
    deadlines = RetainedDeadlines.from_list(doc)
    low, end = doc[:2]
    for i in rng.sample(range(low, end), (end - low) // 4):  # some leave out of order
        deadlines.pop(i)
    again = RetainedDeadlines.from_list(deadlines.to_list())
    held = {i: d for i in range(low, end) if (d := deadlines.get(i)) is not None}
    read = {i: d for i in range(low, end) if (d := again.get(i)) is not None}
    assert read == held
    assert again.pairs() == deadlines.pairs() == [[i, d] for i, d in held.items()]
    assert again.count() == deadlines.count() == len(held)
    assert again.to_list() == deadlines.to_list()


def test_one_ttl_over_many_elements_is_one_lifetime() -> None:
    stamps = StampIndex()
    for entry in range(2_000):  # 200,000 elements, 100 an entry, each with a ttl of 500
        stamps.note(entry * 100, 1_000 + entry)
    own_ids = list(range(200_000))
    own = [stamps.stamp_of(i) + 500 for i in own_ids]
    for age in (None, 60_000):
        listed = [0, 200_000, age, [], own_ids, own, stamps.columns(), True]
        doc = RetainedDeadlines.from_list(listed).to_list()
        assert doc[4] == [[0], [200_000], [500]]  # one run, not a deadline per element
        assert RetainedDeadlines.from_list(doc).get(150_007) == 1_000 + 1_500 + 500
    aged = [0, 200_000, 60_000, [], [], [], stamps.columns(), True]  # no own ttl
    assert RetainedDeadlines.from_list(aged).to_list()[4] == [[], [], []]


@pytest.mark.parametrize("seed", range(20))
def test_a_document_saying_its_stamps_ascend_when_they_do_not_is_read_by_its_stamps(
        seed: int) -> None:
    rng = random.Random(seed)
    doc = _listed(rng, False)
    deadlines = RetainedDeadlines.from_list(doc)
    doc[7] = True  # a document's flag says the stamps ascend; they need not
    restored = RetainedDeadlines.from_list(doc)
    low, end = doc[:2]
    for now in range(900, 1_800, 25):
        assert restored.expired_run(low, end, now) == _one_by_one(deadlines, low, end, now)
