"""Work-queue push options on the brokers: a msg_id alone is taken (deduplicated by the
broker); priorities, delays, headers, ttls and their combinations are refused with
UnsupportedOperation naming the backend, before anything is pushed."""

from __future__ import annotations

from typing import Any

import pytest

from lazily_queue import UnsupportedOperation, WorkQueueCell

from .conftest import fresh


async def test_a_broker_work_queue_refuses_combined_options_by_name(provider: Any) -> None:
    w = WorkQueueCell(provider.work_queue(fresh("work-options"), visibility_timeout=30,
                                          max_deliveries=3))
    backend = type(w.storage).__name__
    for kwargs in ({"priority": 3}, {"delay": 1.0, "msg_id": "m"}, {"ttl": 5},
                   {"headers": {"k": "v"}, "msg_id": "m", "priority": 2}):
        with pytest.raises(UnsupportedOperation, match=backend):
            await w.push("x", **kwargs)
    assert w.pending_len() == 0
    first = await w.push("once", msg_id="m")
    assert await w.push("once", msg_id="m") == first
