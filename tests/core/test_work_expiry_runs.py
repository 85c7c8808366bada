"""Never-delivered work items of ids in a row pushed at one stamp leave together when
they expire (``fresh_head`` / ``discard_fresh``), exactly as one by one would: same
items left, ids, counts, deadlines and reader masks, whatever the runs, ttls, nacked
items between them and limits."""

from __future__ import annotations

import random
from typing import Any

import pytest

from lazily_queue.core.expiry import Expiry
from lazily_queue.core.expiry_take import claim_live, expire_work_head
from lazily_queue.core.work import WorkQueueCore
from tests.expiry_runs import expiry_time, stamped_runs


def _work(seed: int) -> tuple[WorkQueueCore, Expiry, int]:
    """Runs of items pushed at stamps 1_000 and on, each with its own ttl, the default or
    none, some claimed and nacked back between them (or dead-lettered and redriven,
    never delivered again under their old ids); and a time to expire at."""
    rng = random.Random(seed)
    core = WorkQueueCore(1_000_000, rng.choice([1, 5]))
    expiry = Expiry(default_ms=rng.choice([None, 500, 1_500]))
    stamp = 1_000
    for stamp, ttls in stamped_runs(rng):
        for ttl in ttls:
            item_id = core.push(f"v{rng.random():.6f}", stamp).result
            expiry.note(item_id, stamp, ttl)
        if rng.random() < 0.3:  # some go out and come back at the tail, delivered once
            got, _ = core.claim_many("w", 0.0, rng.randint(1, 5))
            for delivery in got:
                expiry.forget(delivery.item_id)
                core.nack("w", delivery.delivery_id)
            if rng.random() < 0.5:
                core.redrive()
    return core, expiry, expiry_time(rng, stamp)


def _state(core: WorkQueueCore, expiry: Expiry, answer: Any) -> Any:
    return (answer, core.pending(), core.in_flight(), expiry.to_list(), expiry.expired)


def _both(seed: int, run: Any, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    states = []
    for at_once in (False, True):
        core, expiry, now = _work(seed)
        with monkeypatch.context() as patched:
            if not at_once:
                patched.setattr(WorkQueueCore, "fresh_head", lambda self: None)
            answer = run(core, expiry, now)
        states.append(_state(core, expiry, answer))
    return states


@pytest.mark.parametrize("seed", range(300))
def test_expired_items_leaving_together_leave_as_one_by_one(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    limit = random.Random(-seed).choice([None, 1, 7, 30])
    before, after = _both(seed, lambda c, e, now: expire_work_head(c, e, now, limit),
                          monkeypatch)
    assert before == after


@pytest.mark.parametrize("seed", range(300))
def test_a_claim_past_expired_runs_claims_as_one_by_one(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(-seed)
    limit, n = rng.choice([None, 1, 7, 30]), rng.randint(1, 50)

    def claim(core: WorkQueueCore, expiry: Expiry, now: int) -> Any:
        leased, expired, mask = claim_live(core, expiry, "x", now, 1.0, n, limit=limit)
        return [d.item_id for d in leased], expired, mask

    before, after = _both(seed, claim, monkeypatch)
    assert before == after


def test_a_run_of_one_push_many_leaves_in_one_discard(monkeypatch: pytest.MonkeyPatch) -> None:
    core = WorkQueueCore(30, 3)
    expiry = Expiry(default_ms=1_000)
    for i in range(5_000):
        core.push(i, 1_000)
    core.push("live", 3_000)
    calls: list[int] = []
    real = WorkQueueCore.discard_head

    def counted(self: WorkQueueCore) -> Any:
        calls.append(1)
        return real(self)

    monkeypatch.setattr(WorkQueueCore, "discard_head", counted)
    assert expire_work_head(core, expiry, 2_500)[0] == 5_000
    assert not calls
    assert [item.value for item in core.pending()] == ["live"]
    assert expiry.expired == 5_000
