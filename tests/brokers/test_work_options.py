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


async def test_a_broker_refuses_a_delayed_nack_naming_the_nack_that_works(
        provider: Any) -> None:
    w = WorkQueueCell(provider.work_queue(fresh("nack-delay"), visibility_timeout=30,
                                          max_deliveries=3))
    await w.push("x")
    delivery = await w.claim("w1", timeout=10)
    with pytest.raises(UnsupportedOperation, match=r"nack\(delay=\).*; nack without delay="):
        await w.nack("w1", delivery.delivery_id, delay=1.0)
    with pytest.raises(UnsupportedOperation, match="nothing is ever delayed"):
        await w.promote_due()
    await w.nack("w1", delivery.delivery_id)  # still leased: the refusal changed nothing
    assert (await w.claim("w1", timeout=10)).attempt == 2
