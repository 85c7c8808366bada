"""`lazily-queue status` on a follower says where the leader's view is: the leader knows
the members' match index and lag."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from lazily_queue import testing
from lazily_queue.cli.status_view import render
from lazily_queue.status import node_status


def _shown(status: dict[str, Any]) -> str:
    """The tables' titles (rich wraps a long one to its table's width when printed)."""
    return "\n".join(str(table.title) for table in render(status))


async def test_a_followers_status_names_the_leader_and_its_page(tmp_path: Path) -> None:
    async with testing.cluster(data_dir=tmp_path) as cluster:
        await cluster.leader()
        async with asyncio.timeout(30):  # a follower that knows the leader (no election on)
            while True:
                status = node_status((await cluster.followers())[0])
                if status["state"] == "follower" and status["leader"] is not None:
                    break
                await asyncio.sleep(0.05)
        leader_id = status["leader"]
        assert "members (match index and lag are known on the leader, node "\
            f"{leader_id}: its page is not known here)" in _shown(status)
        for member in status["members"]:
            if member["id"] == leader_id:
                member["page"] = "http://q1.internal:8101"
        assert f"known on the leader, node {leader_id}: `lazily-queue status --url "\
            "http://q1.internal:8101` shows its view)" in _shown(status)
        leader = await cluster.leader()
        assert "known on the leader" not in _shown(node_status(leader))
        status["leader"] = None
        assert "known on the leader; none is known now)" in _shown(status)
