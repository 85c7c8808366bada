"""HeldPairs: a snapshot's lazy copy of a group's retained deadlines reads as the list
of its pairs, by iteration and by index, and builds that list once for all indexing."""

from __future__ import annotations

import pytest

from lazily_queue.core import expiry_retained
from lazily_queue.core.expiry_retained import HeldPairs, RetainedDeadlines, merged_pairs
from lazily_queue.core.stamps import StampIndex


def _retained(n: int) -> RetainedDeadlines:
    stamps = StampIndex()
    for first in range(0, n, 7):
        stamps.note(first, 1_000 + first)
    own_ids = list(range(3, n, 5))
    return RetainedDeadlines(0, n, 500, stamps, own_ids, [1_200 + i for i in own_ids])


def test_held_pairs_read_as_the_merged_list() -> None:
    retained = _retained(40)
    retained.pop(5)
    own = {45: 9, 41: 7}
    held = HeldPairs(retained, own)
    expected = merged_pairs(retained, own)
    assert list(held) == expected and len(held) == len(expected)
    assert [held[i] for i in range(len(held))] == expected
    assert held[-1] == expected[-1] and held[2:5] == expected[2:5]
    assert list(held) == expected  # iteration after indexing reads the same
    with pytest.raises(IndexError):
        held[len(expected)]


def test_indexing_builds_the_pairs_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = 0
    real = expiry_retained.merged_pairs

    def counting(*args: object) -> list[list[int]]:
        nonlocal calls
        calls += 1
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(expiry_retained, "merged_pairs", counting)
    held = HeldPairs(_retained(200), {})
    assert calls == 0  # made when read, not when copied
    for i in range(len(held)):
        held[i]
    assert calls == 1
