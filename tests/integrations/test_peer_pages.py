"""Reading the other members' vitals keeps going whatever a page address answers."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, cast

import pytest

from lazily_queue import testing
from lazily_queue.peer_pages import QUOTED, PeerPages
from lazily_queue.replicated import ops
from lazily_queue.status import node_status
from lazily_queue.vitals import PROBLEM_TEXT, Vitals, journal_problem
from tests.integrations.canned_pages import http_page
from tests.raft.faulty_disk import FaultyDisk

#: Vitals of the shape a member gives (its other figures left out).
VITALS: dict[str, Any] = {
    "node": "2", "version": "x", "uptime_s": 5.0,
    "disk": {"free_bytes": 10, "total_bytes": 20},
    "fsync": {"count": 0, "p50_ms": None, "p99_ms": None},
    "journal": {"writable": True, "error": None, "snapshot_error": None},
}


@pytest.mark.parametrize("body", [
    json.dumps({**VITALS, "uptime_s": float("inf")}),  # a status with Infinity is not JSON
    json.dumps({**VITALS, "pad": float("nan")}),
    json.dumps(VITALS)[:-1] + ', "pad": 1e999}',
    json.dumps({**VITALS, "disk": None}),  # the status page's script stops at these
    json.dumps({**VITALS, "uptime_s": "5"}),
    json.dumps({**VITALS, "fsync": {**VITALS["fsync"], "p50_ms": "1"}}),
    json.dumps({**VITALS, "journal": {**VITALS["journal"], "writable": "false"}}),
    json.dumps({**VITALS, "journal": {**VITALS["journal"], "error": ["full"]}}),
])
async def test_vitals_of_another_shape_are_that_members_error(body: str) -> None:
    """A page whose vitals are not as a member gives them (numbers a browser cannot
    read, fields the status page reads of another type) is that member's error: its
    vitals are not kept, so every status stays strict JSON its page can show."""
    pages = PeerPages(cast(Any, None))
    async with http_page(lambda: json.dumps(VITALS).encode()) as honest:
        await pages._read("2", honest)
    assert pages.answers["2"]["vitals"] == VITALS
    async with http_page(body.encode) as hostile:
        await pages._read("2", hostile)
    entry = pages.answers["2"]
    assert entry["vitals"] == VITALS and entry["error"]
    json.dumps(entry, allow_nan=False)


async def test_a_pages_error_quotes_a_bounded_part_of_its_answer() -> None:
    """Every member's status repeats a member's vitals error: a page answering a status
    line of 200,000 characters is quoted in at most QUOTED of them."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.0 " + b"x" * 200_000 + b"\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    pages = PeerPages(cast(Any, None))
    try:
        await pages._read("2", f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}")
    finally:
        server.close()
    assert "xxxx" in pages.answers["2"]["error"]
    assert len(pages.answers["2"]["error"]) < QUOTED + 100


async def test_a_hostile_page_does_not_stop_the_reading(tmp_path: Path) -> None:
    async with testing.cluster(3, data_dir=tmp_path) as cluster:
        node = await cluster.wait_for_leader()
        others = [m for m in ("1", "2", "3") if m != node.node_id]
        good = {**VITALS, "node": others[1]}
        async with (http_page(lambda: b"[" * 200_000) as hostile,
                    http_page(lambda: json.dumps(good).encode()) as honest):
            for member, url in zip(others, (hostile, honest), strict=True):
                await node.driver.call(ops.MEMBER_PAGE, [member, url], timeout=5)
            pages = PeerPages(node, interval=0.05, timeout=2)
            pages.start()
            try:
                async with asyncio.timeout(10):
                    while pages.answers.get(others[1], {}).get("vitals") is None:  # noqa: ASYNC110
                        await asyncio.sleep(0.05)
                first = pages.answers[others[1]]["at"]
                async with asyncio.timeout(10):  # still polling after the hostile answers
                    while pages.answers[others[1]]["at"] == first:  # noqa: ASYNC110
                        await asyncio.sleep(0.05)
                assert pages.answers[others[0]]["vitals"] is None
                assert "JSON" in pages.answers[others[0]]["error"]
            finally:
                await pages.stop()


async def test_every_member_names_the_member_whose_disk_refuses_its_journal(
    tmp_path: Path,
) -> None:
    """A member whose journal cannot be written sends its peers nothing saying so; its
    vitals say so, and every member's status reading them names it in its health."""
    disks = {n: FaultyDisk() for n in ("1", "2", "3")}
    cluster = testing.cluster(3, data_dir=tmp_path, durability="fsync", disk_retry=0.05,
                              node_options=lambda n: {"disk": disks[n]})
    async with cluster:
        leader = await cluster.wait_for_leader()
        full = next(n for n in cluster.nodes.values() if n is not leader)
        vitals = Vitals(full)
        async with http_page(lambda: json.dumps(vitals.document()).encode()) as page:
            await leader.driver.call(ops.MEMBER_PAGE, [full.node_id, page], timeout=5)
            assert vitals.document()["journal"]["writable"] is True
            disks[full.node_id].full = True
            await leader.queue("q").push(1)  # the full member's copy fails
            async with asyncio.timeout(10):
                while full.status()["disk"]["writable"]:  # noqa: ASYNC110
                    await asyncio.sleep(0.01)
            pages = PeerPages(leader, interval=0.05, timeout=2)
            pages.start()
            try:
                async with asyncio.timeout(10):
                    while pages.answers.get(full.node_id, {}).get("vitals") is None:  # noqa: ASYNC110
                        await asyncio.sleep(0.05)
            finally:
                await pages.stop()
        seen = node_status(leader, peers=pages.answers)
        entry = next(m for m in seen["members"] if m["id"] == full.node_id)
        assert entry["disk_problem"].startswith("journal not writable: cannot write its journal")
        reason = f"member {full.node_id}: journal not writable: cannot write its journal"
        assert any(r.startswith(reason) and "No space left on device" in r
                   for r in seen["health"]["reasons"])
        assert seen["health"]["level"] == "critical"
        stale = {full.node_id: {**pages.answers[full.node_id], "error": "timed out"}}
        assert not any(r.startswith(f"member {full.node_id}: journal")
                       for r in node_status(leader, peers=stale)["health"]["reasons"])
        disks[full.node_id].full = False


def test_a_journal_problem_quotes_a_bounded_part_of_its_error() -> None:
    """Another member's page may send any error text; every member's health repeats the
    problem, so it quotes at most PROBLEM_TEXT characters of it."""
    long = "E" * 250_000
    for journal in ({"writable": False, "error": long},
                    {"writable": True, "snapshot_error": long}):
        problem = journal_problem(journal)
        assert problem is not None and len(problem) < PROBLEM_TEXT + 120
        assert problem.endswith("... (250000 chars)")
    short = journal_problem({"writable": False, "error": "[Errno 28] No space left on device"})
    assert short == "journal not writable: [Errno 28] No space left on device"
