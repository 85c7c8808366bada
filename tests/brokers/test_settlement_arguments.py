"""A work queue on a broker refuses the arguments a node refuses with the same errors:
a delivery id that is not an int is a ``TypeError`` (not a refused settlement), a worker
that is not a str too (at once, also on an empty queue), and a redrive of ids that name
no dead letter moves nothing."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from lazily_queue import WorkQueueCell

from .conftest import fresh


async def test_delivery_ids_and_workers_of_the_wrong_type_raise_type_error(
        provider: Any) -> None:
    jobs = WorkQueueCell(provider.work_queue(fresh("ids"), visibility_timeout=30,
                                             max_deliveries=3))
    with pytest.raises(TypeError, match="worker must be a str"):
        await asyncio.wait_for(jobs.claim(123), 5)  # type: ignore[arg-type]
    await jobs.push("x")
    delivery = await jobs.claim("w", timeout=10)
    for bad in ("1", True, None, 1.0):
        for settle in (jobs.ack, jobs.nack, jobs.extend):
            with pytest.raises(TypeError, match="delivery_id must be an int"):
                await settle("w", bad)
    with pytest.raises(TypeError, match="delivery_id must be an int"):
        await jobs.ack_many("w", [delivery.delivery_id, "x"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="delivery_id must be an int"):
        await jobs.release("w", ["x"])  # type: ignore[list-item]
    assert await jobs.redrive(["x", -1, True]) == 0  # type: ignore[list-item]
    await jobs.ack("w", delivery.delivery_id)  # the refusals left the lease alone
