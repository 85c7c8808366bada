"""Opening a node's cell again with other settings is refused with a message that names
the settings it is open with, the ones asked for, and what to do."""

from __future__ import annotations

import pytest

from lazily_queue import Limits, RetryPolicy, testing
from lazily_queue.errors import InvalidConfiguration

FIX = "open it with the same settings everywhere (or share the cell), or delete the"


async def test_each_refusal_names_both_settings_and_the_fix() -> None:
    async with testing.cluster(1) as cluster:
        node = cluster.running[0]
        node.queue("q", capacity=2)
        node.queue("bounded", limits=Limits(max_length=2))
        node.topic("t", limits=Limits(max_length=2, overflow="drop_oldest"))
        node.work_queue("w", visibility_timeout=30)
        node.work_queue("r", max_deliveries=5)
        node.queue("e", ttl=5)
        refusals = {
            "capacity 2, and this call asks for capacity 3": lambda: node.queue(
                "q", capacity=3),
            "overflow=reject, and this call asks for no limits": lambda: node.queue(
                "bounded"),
            "overflow=drop_oldest, and this call asks for no limits": lambda: node.topic("t"),
            "visibility_timeout=30, and this call asks for visibility_timeout=10": (
                lambda: node.work_queue("w", visibility_timeout=10)),
            "max_deliveries=5, retry=none, and this call asks for max_deliveries=3, "
            "retry=RetryPolicy(base=1.0, factor=1.0, cap=None)": lambda: node.work_queue(
                "r", retry=RetryPolicy.fixed(1)),
            "expiry rules ttl=5, max_age=none, and this call asks for expiry rules ttl=6, "
            "max_age=none": lambda: (
                node.queue("e", ttl=6)),
        }
        for settings, reopen in refusals.items():
            with pytest.raises(InvalidConfiguration) as refused:
                reopen()
            assert settings in str(refused.value) and FIX in str(refused.value)
