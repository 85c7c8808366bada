"""Members of versions whose handshake features differ: what the start-up report and the
status tell the operator on each side."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from lazily_transports import HandshakeError, PeerRejectedError

from lazily_queue import Node
from lazily_queue.cli.status_view import render
from lazily_queue.link_trouble import LinkTrouble
from lazily_queue.raft import mesh
from lazily_queue.raft.mesh import REQUIRED_FEATURES, SESSION_END_FEATURE
from lazily_queue.status import node_status


def test_a_refusal_for_features_says_which_side_is_older_and_what_to_do() -> None:
    lacks = "peer lacks required features ['session-kept-bytes-v1']"
    for error, which in ((HandshakeError("features", lacks), "an older"),
                         (PeerRejectedError("features", f"peer refused the link: {lacks}"),
                          "a newer")):
        watch = LinkTrouble()
        watch.emit(logging.LogRecord("lazily_transports.mesh", logging.WARNING, __file__, 1,
                                     "dialing peer %d at %s failed: %s",
                                     (2, "tcp://127.0.0.1:7102", error), None))
        assert watch.fatal is not None
        assert watch.fatal.startswith(f"the link to peer 2 failed: {error}. That peer runs "
                                      f"{which} version of lazily-queue than this node")
        assert "stop them all, upgrade every one, and start them again" in watch.fatal
        assert "same `cluster` and secret" not in watch.fatal


async def test_status_tells_a_member_of_another_version_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    peers = {i: f"unix:{tmp_path}/n{i}.sock" for i in (1, 2)}
    node = Node(1, data_dir=tmp_path / "1", peers=peers, secret=b"s", durability="none")
    older = Node(2, data_dir=tmp_path / "2", peers=peers, secret=b"s", durability="none")
    await node.start()
    with monkeypatch.context() as m:  # a member of the version before the newest feature
        m.setattr(mesh, "REQUIRED_FEATURES", REQUIRED_FEATURES - {SESSION_END_FEATURE})
        await older.start()
    try:
        async with asyncio.timeout(10):
            while not all(node_status(n)["members"][k]["link_problem"]  # noqa: ASYNC110
                          for n, k in ((node, 1), (older, 0))):
                await asyncio.sleep(0.05)
        for n, other, which in ((node, "2", "an older"), (older, "1", "a newer")):
            status = node_status(n)
            member = next(m for m in status["members"] if m["id"] == other)
            assert f"lacks required features [{SESSION_END_FEATURE!r}]" in member["link_problem"]
            assert member["link_problem"].endswith(
                f"(it runs {which} version than this node: run one version on every member)")
            assert f"member {other}: {member['link_problem']}" in status["health"]["reasons"]
            members_table = next(t for t in render(status)
                                 if str(t.title).startswith("members"))
            links = [str(cell) for cell in members_table.columns[2].cells]
            assert f"DOWN: {member['link_problem']}" in links
    finally:
        await older.stop()
        await node.stop()
