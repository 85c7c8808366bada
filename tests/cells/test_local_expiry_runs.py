"""A local expiring deque removes a run of expired elements in one pop of the FIFO, and
its listener, limits and headers see exactly what popping them one by one shows."""

from __future__ import annotations

from typing import Any

import pytest

from lazily_queue import Limits
from lazily_queue.core.fifo import Fifo
from lazily_queue.core.push_options import PushOptions
from lazily_queue.core.queue import POP, QueuePopError
from lazily_queue.storage.local_expiry import ExpiringDequeStorage
from lazily_queue.storage.local_limited import LimitedExpiringDequeStorage
from tests.clock import FakeClock

N = 2_000




@pytest.mark.parametrize("how", ["pop", "pop_headers", "expire"])
async def test_an_expired_run_leaves_in_one_fifo_pop_reporting_each_element(
        how: str, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock()
    d: LimitedExpiringDequeStorage[str] = LimitedExpiringDequeStorage(
        Limits(max_length=N + 5), ttl=1.0, clock=clock)
    calls: list[int] = []
    real = Fifo.pop_headers

    def counted(self: Fifo[Any], n: int) -> Any:
        calls.append(n)
        return real(self, n)

    monkeypatch.setattr(Fifo, "pop_headers", counted)
    for i in range(N):
        headers = {"n": str(i)} if i % 3 == 0 else None
        assert await d.offer_options(f"v{i}", PushOptions.checked(headers=headers)) is None
    clock.now += 0.5
    assert await d.offer_options("live", PushOptions.checked(headers={"k": "live"})) is None
    reported: list[tuple[int, int]] = []
    d.set_change_listener(lambda op, pre: reported.append((op, pre)))
    clock.now += 0.6
    if how == "expire":
        assert d.expire() == N
        assert d.len() == 1
    else:
        got: Any = d.pop_stamped(1) if how == "pop" else d.pop_headers(1)
        assert not isinstance(got, QueuePopError)
        assert got[0] == ["live"]
        if how == "pop_headers":
            assert got[2] == [[N, {"k": "live"}]]
        assert d.len() == 0
    assert len(calls) <= 3  # the run of N, then the live one
    popped = N if how == "expire" else N + 1
    assert reported == [(POP, N + 1 - i) for i in range(popped)]
    assert d.expired_count() == N
    assert len(d.quota.sizes) == N + 1 - popped
    assert d.headers_state() == ([[N, {"k": "live"}]] if how == "expire" else [])


async def test_elements_with_ttls_of_their_own_leave_as_their_deadlines_pass() -> None:
    clock = FakeClock()
    d: ExpiringDequeStorage[str] = ExpiringDequeStorage(clock=clock)
    for i in range(30):
        ttl = 1.0 if i % 2 else 3.0
        assert await d.offer_options(f"v{i}", PushOptions.checked(ttl=ttl)) is None
    clock.now += 2
    got = d.pop_stamped(3)
    assert not isinstance(got, QueuePopError)
    assert got[0] == ["v0", "v2", "v4"]  # the odd ones expired among them
    assert d.expired_count() == 2  # v1 and v3; v5 waits behind the take
