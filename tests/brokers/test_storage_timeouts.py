"""A broker storage called directly: its ``timeout`` bounds the round trip, ``None`` is
the connection's own bound, ``0`` sends nothing (``TimeoutError``), and one that is no
number of seconds is refused before anything is sent
(:mod:`lazily_queue.storage.attempts`)."""

from __future__ import annotations

from typing import Any

import pytest

from lazily_queue import QueuePopError

from .conftest import fresh

pytestmark = pytest.mark.timeout(60)


async def test_timeout_zero_sends_nothing_and_none_is_the_connections_bound(
        provider: Any) -> None:
    q = provider.queue(fresh("tz-q"))
    t = provider.topic(fresh("tz-t"))
    w = provider.work_queue(fresh("tz-w"), visibility_timeout=30.0, max_deliveries=3)
    assert await q.offer("kept", timeout=None) is None
    for call in (lambda: q.offer("x", timeout=0), lambda: q.offer("x", timeout=-1.0),
                 lambda: q.poll_many(5, timeout=0), lambda: q.poll(timeout=0),
                 lambda: q.close(timeout=0), lambda: t.publish("x", timeout=0.0),
                 lambda: w.push("x", timeout=0)):
        with pytest.raises(TimeoutError, match="nothing was sent"):
            await call()
    assert await q.offer("kept too", timeout=5) is None
    assert await q.poll_many(10, timeout=5) == ["kept", "kept too"]  # nothing else applied
    assert await q.poll() is QueuePopError.Empty  # and the queue is open
    assert (await t.publish("p", timeout=None)).result == 0
    await w.push("job", timeout=1e300)
    await w.sync()
    assert w.pending_len() == 1


@pytest.mark.parametrize(("bad", "error"), [("soon", TypeError), (float("nan"), ValueError),
                                            (True, TypeError)])
async def test_a_bad_timeout_is_refused_before_anything_is_sent(
        provider: Any, bad: Any, error: type[Exception]) -> None:
    q = provider.queue(fresh("tb-q"))
    w = provider.work_queue(fresh("tb-w"), visibility_timeout=30.0, max_deliveries=3)
    await q.offer("kept")
    for call in (lambda: q.offer("x", timeout=bad), lambda: q.poll_many(1, timeout=bad),
                 lambda: q.close(timeout=bad), lambda: w.push("x", timeout=bad)):
        with pytest.raises(error, match="timeout must be a number of seconds or None"):
            await call()
    assert await q.poll_many(10) == ["kept"]
    assert await q.offer("open") is None
    await w.sync()
    assert w.pending_len() == 0
