"""How a flood client sends: as fast as its bound allows (closed loop), or on a schedule
at a rate (open loop), shared by :mod:`benchmarks.client_flood`'s flooders and
:mod:`benchmarks.client_flood_nats`'s.

Closed loop, a client keeps ``in_flight`` pushes outstanding: each one answered, the
next is sent, so the flood runs at whatever rate the system commits. Open loop, a client
given ``rate`` pushes per second has push *k* due ``k / rate`` seconds after it starts,
and sends it then if fewer than ``in_flight`` of its pushes are outstanding. A push it
could not send on time (its bound full, or due more than :data:`LATE` seconds before the
client got to it, its process short of a CPU) is counted *behind* and never sent: a
system that cannot keep up shows as pushes behind, and the flood does not turn into a
closed loop, nor catch up in a burst. Those behind because the client's own process was
late (:attr:`Behind.late`: short of a CPU) are the flooding side's shortfall, not a slow
answer. :func:`client_rate` splits the whole flood's rate evenly over its clients.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import time
from collections.abc import Awaitable, Callable
from typing import NamedTuple

#: Seconds past its due time after which a push not yet sent counts as behind.
LATE = 0.1


def check_rate(rate: float) -> float:
    """``rate`` if it is a number of pushes per second over 0; :class:`ValueError` in one
    line otherwise (0, negative, not a number, infinite)."""
    if not (isinstance(rate, int | float) and math.isfinite(rate) and rate > 0):
        raise ValueError(f"a flood's rate is pushes per second, a finite number over 0, "
                         f"not {rate!r}")
    return float(rate)


def rate_argument(text: str) -> float:
    """``--rate`` on a command line: :func:`check_rate` of the number ``text``."""
    try:
        return check_rate(float(text))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"pushes per second, a finite number over 0, not {text!r}") from None


def client_rate(rate: float | None, clients: int) -> float | None:
    """Each of ``clients`` clients' share of a flood offering ``rate`` pushes per second
    in all (``None``: no rate, each client floods closed-loop)."""
    if rate is None:
        return None
    if clients < 1:
        raise ValueError(f"a flood has at least one client, not {clients}")
    return check_rate(rate) / clients


class Behind(NamedTuple):
    """Pushes behind schedule, never sent: with the client's bound full (the system did
    not answer in time), and due over :data:`LATE` seconds before the client got to them
    (its own process was late)."""

    full: int = 0
    late: int = 0

    @property
    def total(self) -> int:
        return self.full + self.late


class Pacer:
    """One client's schedule: push ``k`` is due at ``start + k / rate``, every push due
    before ``end``. :meth:`due` says how many to send now and counts those behind;
    :attr:`sent` and :attr:`behind` count the pushes due so far (:attr:`late` of those
    behind were late, the others met the bound full)."""

    def __init__(self, rate: float, in_flight: int, start: float, end: float = math.inf,
                 late: float = LATE) -> None:
        if in_flight < 1:
            raise ValueError(f"a client keeps at least 1 push outstanding, not {in_flight}")
        self.rate, self.in_flight, self.start = check_rate(rate), in_flight, start
        self.end, self.lateness = end, late
        self.sent = self.behind = self.late = 0
        self._next = 0

    @property
    def next_at(self) -> float:
        """When the next push not yet sent nor counted behind is due."""
        return self.start + self._next / self.rate

    @property
    def over(self) -> bool:
        """Every push of the schedule was sent or counted behind."""
        return self.next_at >= self.end

    def due(self, now: float, outstanding: int) -> int:
        """How many pushes to send at ``now`` with ``outstanding`` of this client's pushes
        unanswered: every push due by ``now`` is sent, while the bound has room and it is
        at most :attr:`lateness` seconds late, or else counted behind."""
        send = 0
        while (at := self.next_at) <= now and at < self.end:
            self._next += 1
            if at < now - self.lateness:
                self.behind += 1
                self.late += 1
            elif outstanding + send >= self.in_flight:
                self.behind += 1
            else:
                send += 1
        self.sent += send
        return send


#: Seconds a paced client sleeps at least between two wake-ups (at a higher rate it
#: sends what fell due meanwhile together): fewer wake-ups, less of the flooders' CPU.
TICK = 0.005


async def flood(push: Callable[[], Awaitable[object]], in_flight: int, until: float,
                rate: float | None = None, clock: Callable[[], float] = time.monotonic,
                sleep: Callable[[float], Awaitable[object]] = asyncio.sleep) -> Behind:
    """Call ``push`` until ``until`` (``clock``'s time): closed loop with ``in_flight``
    lanes when ``rate`` is ``None``, else on :class:`Pacer`'s schedule from now to
    ``until`` at ``rate`` pushes per second with at most ``in_flight`` outstanding,
    waking every :data:`TICK` seconds at most. Returns the pushes behind schedule (none
    closed-loop; paced, every push due was sent or is behind) once every push sent has
    ended; a push that raises ends the flood with its exception."""
    if rate is None:
        async def lane() -> None:
            while clock() < until:
                await push()

        await asyncio.gather(*(lane() for _ in range(in_flight)))
        return Behind()
    pacer = Pacer(rate, in_flight, clock(), until)
    pending: set[asyncio.Future[object]] = set()
    failed: list[BaseException] = []

    def ended(task: asyncio.Future[object]) -> None:
        pending.discard(task)
        if not task.cancelled() and (error := task.exception()) is not None:
            failed.append(error)

    while not failed:
        now = clock()
        for _ in range(pacer.due(now, len(pending))):
            task = asyncio.ensure_future(push())
            pending.add(task)
            task.add_done_callback(ended)
        if pacer.over:
            break
        await sleep(max(pacer.next_at, now + TICK) - clock())
    if pending:
        await asyncio.wait(set(pending))
    if failed:
        raise failed[0]
    return Behind(pacer.behind - pacer.late, pacer.late)
