"""Message headers beside limits and TTLs at the cells: a queue push with headers and a
ttl, and headers on a queue with limits, are refused with UnsupportedOperation before
anything is sent (a work queue combines them: tests/cells/test_work_options.py); a
topic's retention keeps the headers of what it keeps."""

from __future__ import annotations

import pytest

from lazily_queue import Limits, QueueCell, UnsupportedOperation, testing


async def test_a_queue_push_with_headers_and_a_ttl_is_refused() -> None:
    async with testing.cluster(1) as c:
        q = (await c.leader()).queue("q")
        with pytest.raises(UnsupportedOperation, match="headers with a ttl"):
            await q.push("a", ttl=5, headers={"k": "v"})
        assert q.len() == 0


async def test_a_queue_with_limits_refuses_headers_locally_and_on_a_cluster() -> None:
    local: QueueCell[str] = QueueCell(limits=Limits(max_length=2))
    with pytest.raises(UnsupportedOperation, match="limits"):
        await local.push("a", headers={"k": "v"})
    assert local.len() == 0
    async with testing.cluster(1) as c:
        q = (await c.leader()).queue("q", limits=Limits(max_length=2))
        with pytest.raises(UnsupportedOperation, match="limits"):
            await q.push("a", headers={"k": "v"})
        await q.push("b")
        assert q.len() == 1


async def test_topic_retention_keeps_the_headers_of_what_it_keeps_on_a_cluster() -> None:
    async with testing.cluster(1) as c:
        t = (await c.leader()).topic("t", limits=Limits(max_length=2, overflow="drop_oldest"))
        for i in range(3):
            await t.publish(f"v{i}", headers={"n": str(i)})
        assert t.dropped() == 1
        assert [dict(t.headers_of(o)) for o in (1, 2)] == [{"n": "1"}, {"n": "2"}]
