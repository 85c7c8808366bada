"""A status lists only the largest objects of each kind, with totals over all of them;
``/objects.json`` (and ``lazily-queue status --kind``) reaches every other one by name."""

from __future__ import annotations

import asyncio
import builtins
import json
import random
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from rich.console import Console

from lazily_queue import object_listing, status, testing
from lazily_queue.cli import main
from lazily_queue.cli.status_view import render
from lazily_queue.integrations.aiohttp import setup
from lazily_queue.object_listing import STATUS_OBJECTS

from .browser import browser, chromium

DEPTHS = {"q0": 1, "q1": 5, "q2": 3, "q3": 5, "q4": 2}


async def test_a_status_lists_the_largest_objects_with_totals_over_all(
        tmp_path: Path) -> None:
    async with testing.cluster(1, data_dir=tmp_path) as cluster:
        node = await cluster.wait_for_leader()
        for name, depth in DEPTHS.items():
            for i in range(depth):
                await node.queue(name).push(i)
        jobs = node.work_queue("jobs")
        await jobs.push(1)
        doc = status.node_status(node, limit=2)
        assert list(doc["queues"]) == ["q1", "q3"]  # the deepest two, by name
        assert doc["objects"]["queues"] == {"total": 5, "listed": 2}
        assert doc["objects"]["work_queues"] == {"total": 1, "listed": 1}
        assert doc["totals"]["queued"] == 16 and doc["totals"]["pending"] == 1
        ties = status.node_status(node, limit=1)
        assert list(ties["queues"]) == ["q1"]  # of equal depth, the smaller name
        console = Console(record=True, width=200)
        console.print(*render(doc))
        assert ("the 2 largest of 5; every one by name: lazily-queue status --kind queues"
                in " ".join(console.export_text().split()))


async def test_every_object_is_reached_a_page_at_a_time(tmp_path: Path) -> None:
    async with testing.cluster(1, data_dir=tmp_path / "data") as cluster:
        node = await cluster.wait_for_leader()
        for name, depth in DEPTHS.items():
            await node.queue(name).push(depth)
        app = web.Application()
        setup(app, node, status_prefix="")
        async with TestClient(TestServer(app)) as client:
            answer = await client.get("/objects.json", params={"kind": "queues",
                                                               "offset": "3"})
            page = await answer.json()
            assert list(page["objects"]) == ["q3", "q4"]
            assert page["objects"]["q3"]["len"] == 1
            assert (page["matching"], page["total"], page["offset"]) == (5, 5, 3)
            answer = await client.get("/objects.json", params={"kind": "queues",
                                                               "prefix": "q2"})
            assert list((await answer.json())["objects"]) == ["q2"]
            for bad in ({"kind": "nope"}, {}, {"kind": "queues", "offset": "-1"}):
                answer = await client.get("/objects.json", params=bad)
                assert answer.status == 400
                assert (await answer.json())["error"]["code"] == "bad_request"


async def test_the_cli_prints_a_page_of_objects(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    async with testing.cluster(1, data_dir=tmp_path / "data") as cluster:
        node = await cluster.wait_for_leader()
        for name in DEPTHS:
            await node.queue(name).push(1)
        app = web.Application()
        setup(app, node, status_prefix="")
        async with TestServer(app) as server:
            url = str(server.make_url("/"))
            base = ["status", "--url", url, "--kind", "queues"]
            assert await asyncio.to_thread(main, [*base, "--offset", "3", "--json"]) == 0
            assert list(json.loads(capsys.readouterr().out)["objects"]) == ["q3", "q4"]
            assert await asyncio.to_thread(main, [*base, "--prefix", "q1"]) == 0
            out = " ".join(capsys.readouterr().out.split())
            assert 'showing 1-1 of 1 whose name starts with "q1" (5 in all)' in out


async def test_the_status_page_says_how_many_objects_it_leaves_out(tmp_path: Path) -> None:
    chromium()  # skip before starting anything when there is no browser
    async with testing.cluster(1, data_dir=tmp_path / "data") as cluster:
        node = await cluster.wait_for_leader()
        await asyncio.gather(*(node.queue(f"q{k:03}").push(k)
                               for k in range(STATUS_OBJECTS + 2)))
        app = web.Application()
        setup(app, node, status_prefix="")
        async with TestServer(app) as server, \
                browser(str(server.make_url("/")), tmp_path / "profile") as page:
            await page.wait_for(
                "document.querySelector('#queues caption')?.textContent === "
                f"'the {STATUS_OBJECTS} largest of {STATUS_OBJECTS + 2}; every one by name: "
                "objects.json?kind=queues&offset=N'")
            rows = await page.evaluate("document.querySelectorAll('#queues tbody tr').length")
            assert rows == STATUS_OBJECTS


def _reference(table: dict[str, int], prefix: str, offset: int) -> tuple[list[str], int]:
    names = sorted(name for name in table if name.startswith(prefix))
    return names[offset:offset + object_listing.PAGE_SIZE], len(names)


def _page(table: dict[str, int], prefix: str, offset: int) -> tuple[list[str], int]:
    page = object_listing.object_page([("queues", table, lambda _n, v: v)], "queues",
                                      prefix, offset)
    assert page["total"] == len(table)
    return list(page["objects"]), page["matching"]


def test_a_page_sorts_only_the_names_added_since_the_last_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A page of many objects costs no sort of every name: the sorted names are kept,
    and a later page sorts only the names declared meanwhile."""
    table = {f"q{k:05}": k for k in range(5000)}
    sorts: list[int] = []

    def counted(items: Any, **kwargs: Any) -> list[Any]:
        done = builtins.sorted(items, **kwargs)
        sorts.append(len(done))
        return done

    monkeypatch.setattr(object_listing, "sorted", counted, raising=False)
    assert _page(table, "", 0) == _reference(table, "", 0)
    sorts.clear()
    for name in ("a-new", "q02500x", "zz"):
        table[name] = 0
    del table["q00000"], table["q04999"]
    for prefix, offset in (("", 0), ("", 2450), ("q025", 0), ("q025", 90), ("zz", 0),
                           ("none", 0), ("", 5100)):
        assert _page(table, prefix, offset) == _reference(table, prefix, offset)
    assert max(sorts, default=0) <= 3


def test_pages_follow_every_change_of_the_table() -> None:
    rng = random.Random(7)
    table: dict[str, int] = {}
    for step in range(60):
        for _ in range(rng.choice((0, 1, 5, 1500))):
            table[f"{rng.choice('abc')}{rng.randrange(10_000)}"] = step
        for name in rng.sample(sorted(table), min(len(table), rng.choice((0, 2, 1200)))):
            del table[name]
        for prefix in ("", "a", "b1", "c99", "d"):
            offset = rng.choice((0, 3, 150, 900))
            assert _page(table, prefix, offset) == _reference(table, prefix, offset)
