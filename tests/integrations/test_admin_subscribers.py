"""Deleting one subscriber of a topic as an operator: ``admin.delete_subscriber`` and its
admin API route free a ``max_subscribers`` slot; unknown topics and subscribers, bad
names and unauthenticated or cross-site requests get typed answers."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from lazily_queue import TooManySubscribers, admin, testing
from lazily_queue.admin import AdminError
from lazily_queue.cli import queue
from lazily_queue.cli.admin_client import AdminClient, CliError
from lazily_queue.integrations.aiohttp import setup
from lazily_queue.names import MAX_NAME_LENGTH
from lazily_queue.node import Node

pytestmark = pytest.mark.timeout(60)

TOKEN = "admin-token-for-tests-0123"
BEARER = {"Authorization": f"Bearer {TOKEN}"}


@contextlib.asynccontextmanager
async def one_node(tmp_path: Path) -> AsyncIterator[tuple[Node, TestClient[Any, Any]]]:
    """One node holding at most two subscriptions per topic, with its admin API."""
    async with testing.cluster(1, data_dir=tmp_path, max_subscribers=2) as cluster:
        node = await cluster.wait_for_leader()
        app = web.Application()
        setup(app, node, status_prefix="", admin_token=TOKEN)
        async with TestClient(TestServer(app)) as http:
            yield node, http


def subscribers(node: Node, topic: str) -> set[str]:
    core = node.view.topic(topic)
    assert core is not None
    return set(core.subscriptions())


async def error_of(response: Any) -> tuple[int, str]:
    return response.status, (await response.json())["error"]["code"]


async def test_admin_delete_subscriber_frees_a_slot(tmp_path: Path) -> None:
    async with one_node(tmp_path) as (node, _):
        news = node.topic("news")
        await news.subscribe("a")
        await news.subscribe("b")
        with pytest.raises(TooManySubscribers) as full:
            await news.subscribe("c")
        # The refusal tells an operator how to free a slot without code.
        assert "`lazily-queue queue delete-subscriber TOPIC ID`" in str(full.value)
        assert await admin.delete_subscriber(node, "news", "a") is True
        assert await admin.delete_subscriber(node, "news", "a") is False  # gone already
        await news.subscribe("c")  # the slot is free
        assert subscribers(node, "news") == {"b", "c"}

        with pytest.raises(AdminError) as unknown:
            await admin.delete_subscriber(node, "nope", "b")
        assert (unknown.value.code, unknown.value.status) == ("not_found", 404)
        assert unknown.value.message == "topic 'nope' has not been declared"
        for topic, subscriber in (("", "b"), ("news", "s" * (MAX_NAME_LENGTH + 1)),
                                  ("news", 7), (None, "b")):
            with pytest.raises(AdminError) as bad:
                await admin.delete_subscriber(node, topic, subscriber)  # type: ignore[arg-type]
            assert (bad.value.code, bad.value.status) == ("bad_request", 400), (topic,
                                                                                subscriber)
        assert subscribers(node, "news") == {"b", "c"}


async def test_subscriber_route(tmp_path: Path) -> None:
    async with one_node(tmp_path) as (node, http):
        odd = node.topic("a/b")  # a name a URL path has to encode
        await odd.subscribe(".")
        await odd.subscribe("x/y")
        with pytest.raises(TooManySubscribers):
            await odd.subscribe("z")
        path = "/admin/api/queues/topic/a%2Fb/subscribers/x%2Fy/delete"

        # Who may act: the token (or a session with its CSRF token), from the node's pages.
        assert await error_of(await http.post(path)) == (401, "unauthorized")
        evil = {**BEARER, "Origin": "http://evil.example"}
        assert await error_of(await http.post(path, headers=evil)) == (403, "cross_origin")
        login = await http.post("/admin/login", json={"token": TOKEN})
        assert login.status == 200
        assert await error_of(await http.post(path)) == (403, "csrf")
        http.session.cookie_jar.clear()
        assert subscribers(node, "a/b") == {".", "x/y"}

        answer = await http.post(path, headers=BEARER)
        assert (answer.status, await answer.json()) == (200, {"deleted": True})
        await odd.subscribe("z")  # the slot is free
        assert await error_of(await http.post(path, headers=BEARER)) == (404, "not_found")
        missing = await http.post(path, headers=BEARER)
        assert (await missing.json())["error"]["message"] == (
            "topic 'a/b' has no subscriber 'x/y'; nothing was deleted")
        # "." as a path segment, and both names in the query (as the page sends them).
        answer = await http.post("/admin/api/queues/topic/_/subscribers/_/delete?name="
                                 f"{quote('a/b', safe='')}&subscriber=.", headers=BEARER)
        assert (answer.status, await answer.json()) == (200, {"deleted": True})
        assert subscribers(node, "a/b") == {"z"}

        for bad, expected in (("/queues/topic/nope/subscribers/z/delete", (404, "not_found")),
                              ("/queues/queue/a%2Fb/subscribers/z/delete",
                               (400, "bad_request")),
                              ("/queues/shelf/a%2Fb/subscribers/z/delete",
                               (400, "bad_request")),
                              (f"/queues/topic/a%2Fb/subscribers/{'s' * 1025}/delete",
                               (400, "bad_request"))):
            answer = await http.post("/admin/api" + bad, headers=BEARER)
            assert await error_of(answer) == expected, bad
        assert subscribers(node, "a/b") == {"z"}


async def test_cli_deletes_subscribers_named_like_path_segments(tmp_path: Path) -> None:
    """``.``, ``..``, ``/`` and the empty id are ids like any other for the CLI."""
    async with one_node(tmp_path) as (node, http):
        client = AdminClient(str(http.make_url("")), TOKEN, 10)
        for topic in ("..", "a/b"):
            for pair in ((".", ".."), ("", "c/d")):
                for subscriber in pair:
                    await node.topic(topic).subscribe(subscriber)
                for subscriber in pair:
                    args = argparse.Namespace(topic=topic, subscriber=subscriber, json=True)
                    await asyncio.to_thread(queue._delete_subscriber, client, args)
                assert subscribers(node, topic) == set(), (topic, pair)
        args = argparse.Namespace(topic="", subscriber="a", json=True)
        with pytest.raises(CliError) as empty:
            await asyncio.to_thread(queue._delete_subscriber, client, args)
        assert (str(empty.value), empty.value.code) == (
            "topic name must be a non-empty string, not ''", 2)
