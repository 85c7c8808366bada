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
    TICK,
    Behind,
    Pacer,
    check_rate,
    client_rate,
    flood,
    rate_argument,
)


class FakeClock:
    """A clock that moves only when slept on (the ``late_at``-th sleep by ``extra``
    seconds more than asked: a process that wakes late); at ``release_at`` it sets
    ``released``; each sleep lets the loop's other tasks run until they wait."""

    def __init__(self, extra: float = 0.0, late_at: int = 0,
                 release_at: float = float("inf")) -> None:
        self.now, self.extra, self.late_at, self.sleeps = 1000.0, extra, late_at, 0
        self.release_at, self.released = release_at, asyncio.Event()

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps += 1
        self.now += seconds + (self.extra if self.sleeps == self.late_at else 0.0)
        if self.now >= self.release_at:
            self.released.set()
        for _ in range(4):  # a push set free ends, and its end is seen
            await asyncio.sleep(0)


async def test_a_paced_client_sends_at_the_rate_it_is_given() -> None:
    clock, sent = FakeClock(), [0]

    async def push() -> None:
        sent[0] += 1

    behind = await flood(push, 512, clock() + 10.0, rate=64.0, clock=clock, sleep=clock.sleep)
    # push k due at k / 64 s: 640 in the 10 s, each sent when due (one a wake-up)
    assert (sent[0], behind) == (640, Behind())
    assert clock.sleeps == 639


async def test_a_client_whose_bound_is_full_counts_the_pushes_behind_and_never_sends_them(
) -> None:
    clock, sent = FakeClock(release_at=1000.5), [0]

    async def answered_after_half_a_second() -> None:
        sent[0] += 1
        await clock.released.wait()

    behind = await flood(answered_after_half_a_second, 8, clock() + 1.0, rate=64.0,
                         clock=clock, sleep=clock.sleep)
    # 64 due in the second, 8 outstanding at most: those due from 8/64 s to 31/64 s met
    # the bound full; from 0.5 s on every push is answered at once, and sent
    assert (sent[0], behind) == (8 + 32, Behind(full=24, late=0))


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
    ending = Pacer(64.0, in_flight=4, start=0.0, end=2.0, late=0.25)
    assert ending.due(0.0, outstanding=0) == 1 and not ending.over
    # woken after the schedule's end: 1 to 127 (due before 2 s) late, none after it
    assert ending.due(3.0, outstanding=0) == 0 and ending.over
    assert (ending.sent, ending.behind, ending.late) == (1, 127, 127)


async def test_a_client_that_wakes_after_the_end_counts_what_was_due_behind() -> None:
    clock, sent = FakeClock(extra=5.0, late_at=1), [0]

    async def push() -> None:
        sent[0] += 1

    behind = await flood(push, 512, clock() + 1.0, rate=64.0, clock=clock, sleep=clock.sleep)
    assert (sent[0], behind) == (1, Behind(full=0, late=63))  # every one due is counted


async def test_at_a_high_rate_a_client_wakes_once_a_tick_and_sends_what_fell_due() -> None:
    clock, sent = FakeClock(), [0]

    async def push() -> None:
        sent[0] += 1

    behind = await flood(push, 512, clock() + 1.0, rate=4096.0, clock=clock,
                         sleep=clock.sleep)
    assert (sent[0], behind) == (4096, Behind())  # every one sent, none late
    assert clock.sleeps <= 1 / TICK + 1  # once a tick, not once a push


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
