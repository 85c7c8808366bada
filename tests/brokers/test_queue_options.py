"""Queue push options on the brokers: a msg_id alone is taken (deduplicated by the
broker); a delivery time, headers or a ttl are refused with UnsupportedOperation naming
the backend, before anything is pushed."""

from __future__ import annotations

from typing import Any

import pytest

from lazily_queue import QueueCell, UnsupportedOperation
from lazily_queue.client.brokers import open_provider

from .conftest import fresh


async def test_a_broker_queue_refuses_a_delay_and_combined_options_by_name(
        broker_url: str) -> None:
    provider = await open_provider(broker_url, poll_interval=0.2)
    try:
        q: QueueCell[Any] = QueueCell(provider.queue(fresh("options")))
        backend = type(q.storage).__name__
        for kwargs in ({"delay": 1.0}, {"delay": 1.0, "msg_id": "m"},
                       {"headers": {"k": "v"}, "msg_id": "m"}):
            with pytest.raises(UnsupportedOperation, match=backend):
                await q.push("x", **kwargs)
        assert await q.offer("once", msg_id="m") is None
        assert await q.offer("once", msg_id="m") is None
        assert await q.poll_many(10) == ["once"]
    finally:
        await provider.close()
