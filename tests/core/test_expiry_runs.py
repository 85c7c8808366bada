"""A run of expired elements leaving at once (``pop_run``) leaves exactly as the same
elements popped one by one would: same elements, ids, counts, deadlines and pops
reported, whatever the runs, ttls, give-backs and limits."""

from __future__ import annotations

import random
from typing import Any

import pytest

from lazily_queue.core.expiry import Expiry
from lazily_queue.core.expiry_take import expire_queue_head, pop_live
from lazily_queue.core.fifo import Fifo
from lazily_queue.core.queue import QueuePopError
from tests.expiry_runs import expiry_time, stamped_runs


def _queue(seed: int) -> tuple[Fifo[Any], Expiry, int]:
    """A queue of runs pushed at stamps 1_000 and on, each element with its own ttl, the
    default or none, some taken and given back with their ids; and a time to expire at."""
    rng = random.Random(seed)
    fifo: Fifo[Any] = Fifo()
    expiry = Expiry(default_ms=rng.choice([None, 500, 1_500]))
    stamp = 1_000
    for stamp, ttls in stamped_runs(rng):
        for ttl in ttls:
            fifo.push_stamped(f"v{fifo.next_id()}", stamp)
            expiry.note(fifo.next_id() - 1, stamp, ttl)
        if rng.random() < 0.3:
            taken = fifo.pop_stamped(rng.randint(1, 5))
            assert not isinstance(taken, QueuePopError)
            fifo.unpop_stamped(*taken)
    return fifo, expiry, expiry_time(rng, stamp)


def _pops(fifo: Fifo[Any], reported: list[int]) -> Any:
    def pop(k: int = 1) -> Any:
        pre = fifo.len()
        result = fifo.pop_stamped(k)
        if not isinstance(result, QueuePopError):
            reported.extend(pre - i for i in range(len(result[0])))
        return result
    return pop


def _state(fifo: Fifo[Any], expiry: Expiry, reported: list[int], answer: Any) -> Any:
    return answer, fifo.elements(), fifo.id_state(), expiry.to_list(), reported


@pytest.mark.parametrize("seed", range(300))
def test_a_run_leaving_at_once_leaves_as_one_by_one(seed: int) -> None:
    limit = random.Random(-seed).choice([None, 1, 7, 30])
    states = []
    for at_once in (False, True):
        fifo, expiry, now = _queue(seed)
        reported: list[int] = []
        pop = _pops(fifo, reported)
        n = expire_queue_head(fifo, expiry, now, pop, limit, pop if at_once else None)
        states.append(_state(fifo, expiry, reported, n))
    assert states[0] == states[1]


@pytest.mark.parametrize("seed", range(300))
def test_a_take_through_runs_leaving_at_once_takes_as_one_by_one(seed: int) -> None:
    rng = random.Random(-seed)
    limit, n = rng.choice([None, 1, 7, 30]), rng.randint(1, 50)
    states = []
    for at_once in (False, True):
        fifo, expiry, now = _queue(seed)
        reported: list[int] = []
        pop = _pops(fifo, reported)
        answer = pop_live(fifo, expiry, now, n, pop, limit, pop if at_once else None)
        states.append(_state(fifo, expiry, reported, answer))
    assert states[0] == states[1]


def test_the_runs_of_one_push_many_leave_in_one_pop_each() -> None:
    fifo: Fifo[Any] = Fifo()
    expiry = Expiry(default_ms=1_000)
    for stamp in (1_000, 1_200):
        for i in range(5_000):
            fifo.push_stamped(i, stamp)
    fifo.push_stamped("live", 5_000)
    expiry.note(fifo.next_id() - 1, 5_000, 3_600_000)  # a ttl of its own, after the runs
    calls: list[int] = []

    def pop(k: int = 1) -> Any:
        calls.append(k)
        return fifo.pop_stamped(k)
    assert expire_queue_head(fifo, expiry, 3_000, pop, 7_000, pop) == 7_000
    assert calls == [5_000, 2_000]
    assert expire_queue_head(fifo, expiry, 3_000, pop, None, pop) == 3_000
    assert fifo.elements() == ["live"] and expiry.expired == 10_000
