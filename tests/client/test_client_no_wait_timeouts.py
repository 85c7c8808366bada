"""A client's calls that do not wait make their attempt whatever their ``timeout`` (``0``
included), as a local cell's do, and refuse one that is no number of seconds before
sending anything (:mod:`lazily_queue.cells.deadline`)."""

from __future__ import annotations

from typing import Any

import pytest

from lazily_queue import QueueCell, QueuePopError
from tests.client.test_client_cluster import client_of, cluster_with_clients

pytestmark = pytest.mark.timeout(60)


async def test_a_clients_non_waiting_calls_attempt_with_timeout_zero() -> None:
    async with cluster_with_clients(1) as (_, addresses), client_of(addresses) as client:
        q: QueueCell[Any] = client.queue("q")
        assert await q.offer("a", timeout=0) is None
        assert await q.poll(timeout=0) == "a"
        for value in ("b", "c", "d"):
            await q.offer(value, timeout=0)
        assert [m.value for m in await q.poll_messages(1, timeout=0)] == ["b"]
        assert await q.poll_many(5, timeout=0) == ["c", "d"]
        assert await q.poll(timeout=0) is QueuePopError.Empty


@pytest.mark.parametrize(("bad", "error"), [("soon", TypeError), (float("nan"), ValueError)])
async def test_a_clients_non_waiting_calls_refuse_a_bad_timeout_applying_nothing(
        bad: Any, error: type[Exception]) -> None:
    async with cluster_with_clients(1) as (_, addresses), client_of(addresses) as client:
        q: QueueCell[Any] = client.queue("q")
        await q.offer("kept")
        for call in (lambda: q.offer("v", timeout=bad), lambda: q.poll(timeout=bad),
                     lambda: q.poll_many(1, timeout=bad),
                     lambda: q.poll_messages(1, timeout=bad), lambda: q.close(timeout=bad)):
            with pytest.raises(error, match="timeout must be a number of seconds"):
                await call()
        assert await q.poll() == "kept"  # nothing was offered nor polled
        assert await q.offer("open") is None  # nor closed
        assert await q.poll() == "open"
