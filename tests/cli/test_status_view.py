"""`lazily-queue status` on a follower says where the leader's view is: the leader knows
the members' match index and lag."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from lazily_queue import testing
from lazily_queue.cli.status_view import render, render_page
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


QUEUE = {"len": 1, "capacity": None, "closed": False}  # a queue's entry in a status


def _caption(page: dict[str, Any]) -> str:
    return str(render_page(page)[0].caption)


def test_a_page_of_objects_offers_a_next_page_only_when_there_is_one() -> None:
    page: dict[str, Any] = {"kind": "queues", "prefix": "", "offset": 0, "limit": 2,
                            "matching": 3, "total": 3,
                            "objects": {"q0": QUEUE, "q1": QUEUE}}
    assert _caption(page) == "showing 1-2 of 3 (3 in all); next: --offset 2"
    page.update(offset=2, objects={"q2": QUEUE})
    assert _caption(page) == "showing 3-3 of 3 (3 in all)"
    page.update(offset=5, objects={})  # past the last match: an empty page, still captioned
    assert _caption(page) == "showing none of 3 (3 in all)"


def test_names_are_shown_as_written_never_read_as_markup() -> None:
    """A queue may be named ``jobs[/]x`` or ``[bold]y``: shown as is, where rich's markup
    dropped the second and raised on the first (a traceback for ``status``)."""
    from rich.console import Console

    page: dict[str, Any] = {"kind": "queues", "prefix": "", "offset": 0, "limit": 10,
                            "matching": 2, "total": 2,
                            "objects": {"jobs[/]x": QUEUE, "[bold]y": QUEUE}}
    for prefix, objects in (("", page["objects"]), ("[bold]y", {}), ("jobs[/]", {})):
        console = Console(width=200, record=True)
        console.print(*render_page(dict(page, prefix=prefix, objects=objects)))
        text = " ".join(console.export_text().split())  # the prefix is in the caption
        assert all(name in text for name in objects), text
        assert prefix in text, text
