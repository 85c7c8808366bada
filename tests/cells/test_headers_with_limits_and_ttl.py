"""Message headers beside limits and TTLs at the cells: a queue push takes headers with
a ttl, a queue with limits keeps headers (of what it keeps); a work queue combines them
too (tests/cells/test_work_options.py); a topic's retention keeps the headers of what it
keeps."""

from __future__ import annotations

from lazily_queue import Limits, QueueCell, testing


async def test_a_queue_push_takes_headers_and_a_ttl_together() -> None:
    async with testing.cluster(1) as c:
        q = (await c.leader()).queue("q")
        await q.push("a", ttl=5, headers={"k": "v"})
        message = await q.pop_message()
        assert (message.value, dict(message.headers)) == ("a", {"k": "v"})


async def test_a_queue_with_limits_keeps_headers_locally_and_on_a_cluster() -> None:
    local: QueueCell[str] = QueueCell(limits=Limits(max_length=2, overflow="drop_oldest"))
    async with testing.cluster(1) as c:
        replicated = (await c.leader()).queue(
            "q", limits=Limits(max_length=2, overflow="drop_oldest"))
        for q in (local, replicated):
            for i in range(3):
                await q.push(f"v{i}", headers={"n": str(i)})
            assert q.len() == 2 and q.quota is not None and q.quota.dropped() == 1
            got = [await q.pop_message() for _ in range(2)]
            assert [(m.value, dict(m.headers)) for m in got] == [("v1", {"n": "1"}),
                                                                ("v2", {"n": "2"})]
            assert (q.quota.bytes(), q.len()) == (0, 0)  # message pops count as pops


async def test_topic_retention_keeps_the_headers_of_what_it_keeps_on_a_cluster() -> None:
    async with testing.cluster(1) as c:
        t = (await c.leader()).topic("t", limits=Limits(max_length=2, overflow="drop_oldest"))
        for i in range(3):
            await t.publish(f"v{i}", headers={"n": str(i)})
        assert t.dropped() == 1
        assert [dict(t.headers_of(o)) for o in (1, 2)] == [{"n": "1"}, {"n": "2"}]
