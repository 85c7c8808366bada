"""``benchmarks/flood_pacing.py``: a paced flood client sends at its rate, with at most
its bound outstanding, counts what it could not send on time as behind and never sends
it; bad rates are refused in one line. Every clock here is a fake one: the counts are
the schedule's, never a measurement."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.flood_pacing import (  # noqa: E402
    Behind,
    Pacer,
    check_rate,
    client_rate,
    flood,
    rate_argument,
)


class FakeClock:
    """A clock that moves only when slept on (the ``late_at``-th sleep by ``extra``
    seconds more than asked: a process that wakes late); each sleep lets the loop's
    other tasks run once."""

    def __init__(self, extra: float = 0.0, late_at: int = 0) -> None:
        self.now, self.extra, self.late_at, self.sleeps = 1000.0, extra, late_at, 0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps += 1
        self.now += seconds + (self.extra if self.sleeps == self.late_at else 0.0)
        await asyncio.sleep(0)


async def test_a_paced_client_sends_at_the_rate_it_is_given() -> None:
    clock, sent = FakeClock(), [0]

    async def push() -> None:
        sent[0] += 1

    behind = await flood(push, 512, clock() + 10.0, rate=64.0, clock=clock, sleep=clock.sleep)
    # push k due at k / 64 s: 640 in the 10 s, each sent when due (one a wake-up)
    assert (sent[0], behind) == (640, Behind())
    assert clock.sleeps == 640


async def test_a_client_whose_bound_is_full_counts_the_pushes_behind_and_never_sends_them(
) -> None:
    clock, sent, answered = FakeClock(), [0], asyncio.Event()

    async def unanswered() -> None:
        sent[0] += 1
        await answered.wait()

    async def answer_at_the_end() -> None:
        while clock() < 1001.0:  # noqa: ASYNC110 - the fake clock moves as flood sleeps
            await asyncio.sleep(0)
        answered.set()

    ending = asyncio.create_task(answer_at_the_end())
    behind = await flood(unanswered, 8, clock() + 1.0, rate=64.0, clock=clock,
                         sleep=clock.sleep)
    await ending
    # 64 due in the second, 8 outstanding at most: the rest met the bound full
    assert (sent[0], behind) == (8, Behind(full=56, late=0))


async def test_a_client_that_wakes_late_counts_the_pushes_already_late_behind() -> None:
    clock, sent = FakeClock(extra=1.0, late_at=2), [0]  # the second sleep wakes 1 s late

    async def push() -> None:
        sent[0] += 1

    behind = await flood(push, 512, clock() + 1.5, rate=64.0, clock=clock, sleep=clock.sleep)
    # push 0 at 0 s, 1 at 1/64 s; woken at 1 s + 2/64 instead of 2/64: pushes due over
    # 0.1 s before (2 to 59) are behind, 60 to 66 sent at once; then one a wake-up up to
    # 95 (due at 1.484 s)
    assert (sent[0], behind) == (2 + 7 + 29, Behind(full=0, late=58))


def test_the_schedule_counts_every_push_due_as_sent_or_behind() -> None:
    pacer = Pacer(64.0, in_flight=4, start=0.0, late=0.25)
    assert pacer.due(0.0, outstanding=0) == 1 and pacer.next_at == 1 / 64
    # 64 more due by 1 s: the 47 due before 0.75 s are late; of the other 17, 3 fit
    # beside the one outstanding
    assert pacer.due(1.0, outstanding=1) == 3
    assert (pacer.sent, pacer.behind, pacer.late) == (4, 47 + 14, 47)
    assert pacer.due(1.0, outstanding=0) == 0  # nothing more due yet
    assert pacer.next_at == 65 / 64
    pacer.finish(2.0)  # woken after the schedule's end: 65 to 127 never reached, late
    assert (pacer.sent, pacer.behind, pacer.late) == (4, 61 + 63, 47 + 63)


async def test_a_client_that_wakes_after_the_end_counts_what_was_due_behind() -> None:
    clock, sent = FakeClock(extra=5.0, late_at=1), [0]

    async def push() -> None:
        sent[0] += 1

    behind = await flood(push, 512, clock() + 1.0, rate=64.0, clock=clock, sleep=clock.sleep)
    assert (sent[0], behind) == (1, Behind(full=0, late=63))  # every one due is counted


async def test_a_push_that_fails_ends_the_paced_flood_with_its_error() -> None:
    clock, calls = FakeClock(), [0]

    async def push() -> None:
        calls[0] += 1
        if calls[0] == 3:
            raise ConnectionError("member gone")

    with pytest.raises(ConnectionError, match="member gone"):
        await flood(push, 512, clock() + 10.0, rate=64.0, clock=clock, sleep=clock.sleep)
    assert calls[0] <= 4  # ended at once: the one sent before the failure was seen


async def test_without_a_rate_each_lane_pushes_again_as_soon_as_answered() -> None:
    clock, outstanding, most = FakeClock(), [0], [0]

    async def push() -> None:
        outstanding[0] += 1
        most[0] = max(most[0], outstanding[0])
        await clock.sleep(0.25)
        outstanding[0] -= 1

    assert await flood(push, 3, clock() + 1.0, clock=clock, sleep=clock.sleep) == Behind()
    assert most[0] == 3


def test_the_floods_rate_is_split_evenly_over_its_clients() -> None:
    assert client_rate(4000, 17) == 4000 / 17
    assert client_rate(None, 17) is None
    with pytest.raises(ValueError, match="at least one client"):
        client_rate(4000, 0)


@pytest.mark.parametrize("rate", [0, -5.0, float("nan"), float("inf")])
def test_a_bad_rate_is_refused_in_one_line(rate: float) -> None:
    with pytest.raises(ValueError, match=r"^a flood's rate is pushes per second, a finite "
                                         r"number over 0, not [^\n]+$"):
        check_rate(rate)
    with pytest.raises(ValueError, match="finite number over 0"):
        Pacer(rate, 512, 0.0)
    with pytest.raises(ValueError, match="finite number over 0"):
        client_rate(rate, 5)
    with pytest.raises(argparse.ArgumentTypeError, match=(
            rf"^pushes per second, a finite number over 0, not '{rate}'$")):
        rate_argument(str(rate))


def test_a_rate_that_is_not_a_number_is_refused() -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=r"not 'fast'$"):
        rate_argument("fast")
    assert rate_argument("2000") == 2000.0
