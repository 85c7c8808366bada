"""``lazily-queue status`` tables and the status document of a real cluster."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from rich.console import Console

from lazily_queue import testing
from lazily_queue.cli.status_view import render
from lazily_queue.status import node_status


async def test_status_document_and_tables(tmp_path: Path) -> None:
    cluster = testing.cluster(data_dir=tmp_path)
    nodes = list(cluster.nodes.values())
    for node in nodes:
        await node.start()
    try:
        leader = await cluster.wait_for_leader()
        follower = next(n for n in nodes if n is not leader)
        await follower.queue("orders", capacity=10).push(1)
        jobs = follower.work_queue("jobs")
        await jobs.push("a")
        await jobs.push("b")
        await jobs.claim("w1")
        news = follower.topic("news")
        await news.subscribe("reader")
        for i in range(3):
            await news.publish(i)
        await cluster.settle()

        async with asyncio.timeout(5):  # the leader learns the followers' last acks
            while True:
                doc = node_status(leader)
                if all(m["lag"] == 0 for m in doc["members"]):
                    break
                await leader.driver.next_step()
        assert json.loads(json.dumps(doc)) == doc  # plain JSON
        assert doc["totals"] == {"queued": 1, "pending": 1, "in_flight": 1, "dead_letters": 0,
                                 "topic_lag": 3}
        assert [(m["id"], m["role"], m["lag"]) for m in doc["members"]] == [
            (i, "leader" if i == leader.node_id else "follower", 0) for i in ("1", "2", "3")]
        follower_doc = node_status(follower)
        others = [m for m in follower_doc["members"] if not m["self"]]
        assert all(m["lag"] is None and m["match_index"] is None for m in others)

        console = Console(record=True, width=140)
        console.print(*render(doc))
        text = console.export_text()
        for expected in (f"node {leader.node_id} of cluster 'lazily-queue'", "(this node)",
                         "orders", "jobs", "w1: 1", "news", "reader (3)"):
            assert expected in text, expected
    finally:
        for node in nodes:
            await node.stop()
