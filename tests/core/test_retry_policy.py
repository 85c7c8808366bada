"""A retry policy's arguments are checked when it is made; a stored one reads back as
it was stored."""

from __future__ import annotations

import pytest

from lazily_queue import RetryPolicy
from lazily_queue.errors import InvalidSchedule


@pytest.mark.parametrize("make", [
    lambda: RetryPolicy(10, 2, 5),
    lambda: RetryPolicy(1, 1, 0),
    lambda: RetryPolicy.exponential(base=120),  # over the default cap of 60
    lambda: RetryPolicy.exponential(base=1, factor=2, cap=0.5),
])
def test_a_cap_below_the_base_is_refused_when_the_policy_is_made(make: object) -> None:
    with pytest.raises(InvalidSchedule, match=r"retry cap must be at least retry base.*"
                       r"give cap >= .*cap=None"):
        make()  # type: ignore[operator]


@pytest.mark.parametrize("args, field", [
    ((float("nan"),), "retry base"), ((float("inf"),), "retry base"), ((-1,), "retry base"),
    ((1, 2, float("nan")), "retry cap"), ((1, 2, float("inf")), "retry cap"),
    ((1, 2, -1), "retry cap"), ((1, float("nan")), "retry factor"),
])
def test_a_value_out_of_range_is_refused_naming_its_field(args: tuple[float, ...],
                                                          field: str) -> None:
    with pytest.raises(InvalidSchedule, match=field):
        RetryPolicy(*args)


def test_a_cap_equal_to_the_base_and_a_zero_policy_are_taken() -> None:
    assert RetryPolicy(5, 2, 5).delay(3) == 5
    assert RetryPolicy(0, 1, 0).delay(1) == 0


def test_a_stored_policy_whose_cap_is_below_its_base_still_reads() -> None:
    """Earlier versions took one: a replica applying their ops, or a snapshot holding
    one, reads it as stored, and counts it in milliseconds as before."""
    stored = RetryPolicy.from_list([10, 2, 5])
    assert stored.to_list() == [10, 2, 5] and stored.delay(1) == 5
    assert stored.scaled(1000).to_list() == [10_000, 2, 5000]
    with pytest.raises(InvalidSchedule, match="retry cap"):
        RetryPolicy.from_list([10, 2, float("nan")])
