"""``/subscribers.json`` reaches every subscriber of a topic, not only the most lagging
ones a status lists: pages by id from an offset, filtered by an id prefix, with how many
match and how many there are; a malformed query is a 400 saying what is accepted."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from lazily_queue import status, subscriber_listing, testing
from lazily_queue.integrations.aiohttp import setup

pytestmark = pytest.mark.timeout(60)

IDS = ("a1", "a2", "a3", "b1", "b<2>")


@contextlib.asynccontextmanager
async def topic_with_five(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                          ) -> AsyncIterator[TestClient[Any, Any]]:
    """A node whose topic ``news`` has five subscribers; statuses list two, pages hold two."""
    monkeypatch.setattr(status, "MAX_SUBSCRIBERS_SHOWN", 2, raising=False)
    monkeypatch.setattr(subscriber_listing, "PAGE_SIZE", 2, raising=False)
    async with testing.cluster(1, data_dir=tmp_path) as cluster:
        node = await cluster.wait_for_leader()
        news = node.topic("news")
        for sid in IDS:
            await news.subscribe(sid)
        await news.publish("x")
        await news.advance("a1")
        app = web.Application()
        setup(app, node, status_prefix="")
        async with TestClient(TestServer(app)) as http:
            yield http


async def listing(http: TestClient[Any, Any], query: str) -> dict[str, Any]:
    response = await http.get("/subscribers.json?" + query)
    assert response.status == 200, await response.text()
    doc: dict[str, Any] = await response.json()
    return doc


def ids(doc: dict[str, Any]) -> list[str]:
    return [s["id"] for s in doc["subscribers"]]


async def test_every_subscriber_is_reached_by_offset_and_prefix(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with topic_with_five(tmp_path, monkeypatch) as http:
        shown = (await (await http.get("/status.json")).json())["topics"]["news"]
        assert len(shown["subscribers"]) == 2 and shown["subscribers_total"] == 5
        first = await listing(http, "name=news")
        assert ids(first) == ["a1", "a2"]
        assert (first["matching"], first["total"], first["offset"], first["limit"]) == (5, 5, 0, 2)
        assert first["subscribers"][0] == {"id": "a1", "durability": "durable",
                                           "connected": True, "cursor": 1, "lag": 0}
        assert first["subscribers"][1]["lag"] == 1
        assert ids(await listing(http, "name=news&offset=2")) == ["a3", "b1"]
        assert ids(await listing(http, "name=news&offset=4")) == ["b<2>"]
        for past in ("5", "1000000000"):
            doc = await listing(http, "name=news&offset=" + past)
            assert ids(doc) == [] and doc["matching"] == 5 and doc["total"] == 5
        doc = await listing(http, "name=news&prefix=b")
        assert ids(doc) == ["b1", "b<2>"] and (doc["matching"], doc["total"]) == (2, 5)
        doc = await listing(http, "name=news&prefix=b%3C&offset=0")
        assert ids(doc) == ["b<2>"] and doc["prefix"] == "b<"
        assert ids(await listing(http, "name=news&prefix=zz")) == []


async def test_a_malformed_listing_query_is_a_400_naming_the_cause(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with topic_with_five(tmp_path, monkeypatch) as http:
        for offset in ("abc", "-1", "1e3", "1.5", "+1", " 1", "%EF%BC%91", "1000000001",
                       "9" * 5000, "NaN"):
            response = await http.get("/subscribers.json?name=news&offset=" + offset)
            assert response.status == 400, (offset, await response.text())
            error = (await response.json())["error"]
            assert error["code"] == "bad_request" and "offset must be a whole number" in (
                error["message"]), offset
            assert len(error["message"]) < 200
        response = await http.get("/subscribers.json")
        assert response.status == 400 and "name= is required" in await response.text()
        response = await http.get("/subscribers.json?name=news&prefix=" + "x" * 1025)
        assert response.status == 400 and "prefix must be at most" in await response.text()
        response = await http.get("/subscribers.json?name=nope")
        assert response.status == 404
        assert (await response.json())["error"]["code"] == "not_found"
