"""The admin API against hostile or odd input: credentials that are not valid text,
malformed parameters and dead letters JSON cannot hold get typed answers, never a 500."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import decimal
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from lazily_queue import admin_auth, testing
from lazily_queue.cli.admin_client import AdminClient
from lazily_queue.integrations import aiohttp_admin
from lazily_queue.integrations.aiohttp import setup
from lazily_queue.node import Node

TOKEN = "admin-token-for-tests-0123"
BEARER = {"Authorization": f"Bearer {TOKEN}"}


@contextlib.asynccontextmanager
async def one_node(tmp_path: Path) -> AsyncIterator[tuple[Node, TestClient[Any, Any]]]:
    cluster = testing.cluster(1, data_dir=tmp_path)
    node = cluster.node(1)
    app = web.Application()
    setup(app, node, status_prefix="", admin_token=TOKEN)
    async with TestClient(TestServer(app)) as http:
        await cluster.wait_for_leader()
        yield node, http


async def raw_status(http: TestClient[Any, Any], request: bytes) -> bytes:
    """The status line the server answers ``request`` (raw bytes) with."""
    reader, writer = await asyncio.open_connection(http.host, http.port)
    try:
        writer.write(request)
        await writer.drain()
        return (await reader.readline()).rstrip()
    finally:
        writer.close()


async def error_of(response: Any) -> tuple[int, str]:
    return response.status, (await response.json())["error"]["code"]


async def test_credentials_that_are_not_text_are_refused_not_a_server_error(
        tmp_path: Path) -> None:
    async with one_node(tmp_path) as (_, http):
        status = await raw_status(http, b"GET /admin/api/queues HTTP/1.1\r\nHost: x\r\n"
                                  b"Authorization: Bearer \xff\xfe\r\nConnection: close\r\n\r\n")
        assert status == b"HTTP/1.1 401 Unauthorized"
        login = await http.post("/admin/login", data=b'{"token": "\\ud800"}')
        assert await error_of(login) == (401, "unauthorized")
        # A browser session whose CSRF header is not valid text.
        csrf = (await (await http.post("/admin/login", json={"token": TOKEN})).json())["csrf"]
        cookie = http.session.cookie_jar.filter_cookies(http.make_url("/"))["lazily_admin"]
        assert csrf
        status = await raw_status(
            http, b"POST /admin/api/queues/queue/q/purge HTTP/1.1\r\nHost: x\r\n"
            b"Cookie: lazily_admin=" + cookie.value.encode() + b"\r\nX-CSRF-Token: \xff\r\n"
            b"Content-Length: 0\r\nConnection: close\r\n\r\n")
        assert status == b"HTTP/1.1 403 Forbidden"


async def test_malformed_paging_parameters_are_bad_requests(tmp_path: Path) -> None:
    async with one_node(tmp_path) as (_, http):
        for value in ("\u00b2", "\u0661", "9" * 5000):
            response = await http.get(f"/admin/api/dlq/jobs?offset={value}", headers=BEARER)
            assert await error_of(response) == (400, "bad_request"), value


async def test_purge_takes_dead_letters_as_a_boolean(tmp_path: Path) -> None:
    async with one_node(tmp_path) as (node, http):
        jobs = node.work_queue("jobs", visibility_timeout=30, max_deliveries=1)
        await jobs.push("kept")
        delivery = await jobs.claim("w")
        await jobs.nack("w", delivery.delivery_id)
        response = await http.post("/admin/api/queues/work_queue/jobs/purge",
                                   json={"dead_letters": "false"}, headers=BEARER)
        assert await error_of(response) == (400, "bad_request")
        assert jobs.dead_letter_len() == 1


async def test_dead_letters_of_every_value_type_are_listed(tmp_path: Path) -> None:
    async with one_node(tmp_path) as (node, http):
        jobs = node.work_queue("jobs", visibility_timeout=30, max_deliveries=1)
        value = {"at": datetime.datetime(2026, 1, 2, 3, 4, tzinfo=datetime.UTC),
                 "day": datetime.date(2026, 1, 2), "amount": decimal.Decimal("1.50"),
                 "id": uuid.UUID(int=7), "tags": {"a"}, "pair": (1, 2), "raw": [b"\x00"],
                 b"key": "bytes key", "odd": [float("nan"), float("inf")]}
        await jobs.push(value)
        delivery = await jobs.claim("w")
        await jobs.nack("w", delivery.delivery_id)
        response = await http.get("/admin/api/dlq/jobs", headers=BEARER)
        assert response.status == 200, await response.text()

        def refuse(token: str) -> None:
            raise ValueError(f"not JSON: {token}")

        page = json.loads(await response.text(), parse_constant=refuse)  # as a browser
        shown = page["dead_letters"][0]["value"]
        assert shown["pair"] == [1, 2] and shown["raw"] == ["b'\\x00'"]
        assert shown["at"] == "2026-01-02T03:04:00+00:00" and shown["amount"] == "1.50"
        assert shown["odd"] == ["nan", "inf"] and shown["b'key'"] == "bytes key"


async def test_a_body_nested_too_deeply_is_a_bad_request(tmp_path: Path) -> None:
    async with one_node(tmp_path) as (node, http):
        await node.queue("q").push("kept")
        for path in ("/admin/api/queues/queue/q/purge", "/admin/api/leadership",
                     "/admin/login"):
            response = await http.post(path, data=b'{"a":' * 5000 + b"1" + b"}" * 5000,
                                       headers=BEARER)
            assert await error_of(response) == (400, "bad_request"), path
        assert node.queue("q").len() == 1


async def test_a_body_is_read_whole_and_not_waited_for_forever(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(aiohttp_admin, "BODY_TIMEOUT", 0.5, raising=False)
    async with one_node(tmp_path) as (_, http):
        body = json.dumps({"token": TOKEN}).encode()
        head = (b"POST /admin/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body))
        reader, writer = await asyncio.open_connection(http.host, http.port)
        try:  # the body arrives in two parts: both are read
            writer.write(head + body[:5])
            await writer.drain()
            await asyncio.sleep(0.1)
            writer.write(body[5:])
            await writer.drain()
            assert (await reader.readline()).rstrip() == b"HTTP/1.1 200 OK"
        finally:
            writer.close()
        reader, writer = await asyncio.open_connection(http.host, http.port)
        try:  # a body that never ends: refused once the deadline passed
            writer.write(head + body[:5])
            await writer.drain()
            async with asyncio.timeout(5):
                status = (await reader.readline()).rstrip()
            assert status == b"HTTP/1.1 408 Request Timeout"
        finally:
            writer.close()


async def test_a_member_address_no_member_can_listen_on_is_refused(tmp_path: Path) -> None:
    """Control characters, and unix: socket paths that are empty, a directory or too long."""
    async with one_node(tmp_path) as (node, http):
        for address in ("unix:/tmp/a\nERROR forged log line", "ws://h:1/p\r\nx", "ws://h:1/ p",
                        "unix:", "unix:///run/lq/", "unix:///" + "x" * 200):
            response = await http.post("/admin/api/members", headers=BEARER,
                                       json={"id": 7, "address": address})
            assert await error_of(response) == (400, "bad_request"), address
        assert node.view.address("7") is None
        assert "7" not in node.driver.replica.engine.members


async def test_a_member_at_another_members_address_is_refused(tmp_path: Path) -> None:
    """Its address, or another spelling of it: that member listens there, so the new
    voter could never run, and it would count in the quorum."""
    from types import SimpleNamespace

    from lazily_queue.admin import AdminError, add_member

    sockets = {"1": f"unix://{tmp_path}/n1.sock", "2": f"unix://{tmp_path}/n2.sock"}
    node: Any = SimpleNamespace(
        node_id="1", listen=sockets["1"], peers={"2": sockets["2"]},
        recorded_address=lambda member: "tcp://127.0.0.1:7003" if member == "3" else None,
        driver=SimpleNamespace(replica=SimpleNamespace(engine=SimpleNamespace(
            members={"1", "2", "3"}))))
    for address, holder in ((sockets["1"], "1"), (f"unix:{tmp_path}/./n2.sock", "2"),
                            ("tcp://127.0.0.1:7003", "3")):
        with pytest.raises(AdminError) as refused:
            await add_member(node, 7, address, force=True)
        assert refused.value.code == "bad_request"
        assert f"leads where member {holder} listens" in str(refused.value)


async def test_a_member_id_no_node_can_have_is_refused(tmp_path: Path) -> None:
    """An id that is not ``str(int)`` of 0..2**64-1 would be replicated as a voter no node
    can be: every member would then refuse to start (and the voter counts in the quorum)."""
    async with one_node(tmp_path) as (node, http):
        for member in ("01", "\u00b2", "18446744073709551616", 18446744073709551616, "+7",
                       "7 "):
            response = await http.post("/admin/api/members", headers=BEARER,
                                       json={"id": member, "address": "tcp://127.0.0.1:1"})
            assert await error_of(response) == (400, "bad_request"), member
        assert sorted(node.driver.replica.engine.members) == ["1"]
        assert node.view.address("01") is None and node.view.address("\u00b2") is None


async def test_objects_named_like_path_segments_are_administered(tmp_path: Path) -> None:
    """``.`` and ``..`` are names like any other: the CLI's paths do not resolve them away."""
    from lazily_queue.cli import dlq, queue

    async with one_node(tmp_path) as (node, http):
        for name in (".", "..", "a/b"):
            await node.queue(name).push(1)
        jobs = node.work_queue("..", visibility_timeout=30, max_deliveries=1)
        await jobs.push("x")
        await jobs.nack("w", (await jobs.claim("w")).delivery_id)
        client = AdminClient(str(http.make_url("")), TOKEN, 10)
        for name in (".", "..", "a/b"):
            args = argparse.Namespace(name=name, kind="queue", dead_letters=False, json=True)
            await asyncio.to_thread(queue._change("purge"), client, args)
            assert node.queue(name).len() == 0, name
        args = argparse.Namespace(name="..", offset=0, limit=10, items=None, json=True)
        await asyncio.to_thread(dlq._list, client, args)
        await asyncio.to_thread(dlq._redrive, client, args)
        assert jobs.dead_letter_len() == 0


async def test_guessing_the_token_is_throttled_per_source(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(admin_auth, "GUESS_WINDOW", 1.0, raising=False)
    async with one_node(tmp_path) as (_, http):
        for _ in range(admin_auth.MAX_GUESSES):
            wrong = await http.get("/admin/api/queues",
                                   headers={"Authorization": "Bearer not-the-token-at-all"})
            assert await error_of(wrong) == (401, "unauthorized")
        # Over the allowance even the right token waits: guessing gains nothing.
        for attempt in (http.get("/admin/api/queues", headers=BEARER),
                        http.post("/admin/login", json={"token": TOKEN})):
            response = await attempt
            assert await error_of(response) == (429, "too_many_attempts")
            assert int(response.headers["Retry-After"]) >= 1
        await asyncio.sleep(1.1)  # the window passed
        assert (await http.get("/admin/api/queues", headers=BEARER)).status == 200


async def test_a_query_never_redirects_a_delete_to_another_object(tmp_path: Path) -> None:
    """``.../topic/subscribers/delete?name=chat&subscriber=alice`` matches the *topic's*
    delete route (its name segment "subscribers"): it deleted the whole topic "chat"."""
    async with one_node(tmp_path) as (node, http):
        chat = node.topic("chat")
        await chat.subscribe("alice")
        await chat.subscribe("bob")
        for path in ("/admin/api/queues/topic/subscribers/delete?name=chat&subscriber=alice",
                     "/admin/api/queues/topic/chat/delete?subscriber=alice",
                     "/admin/api/queues/topic/chat/purge?subscriber=alice",
                     "/admin/api/queues/topic/other/delete?name=chat",
                     "/admin/api/queues/topic/chat/subscribers/bob/delete?subscriber=alice"):
            response = await http.post(path, headers=BEARER, json={})
            assert await error_of(response) == (400, "bad_request"), path
        assert set(node.view.topics["chat"].subscriptions()) == {"alice", "bob"}
        response = await http.post(
            "/admin/api/queues/topic/_/subscribers/_/delete?name=chat&subscriber=alice",
            headers=BEARER)
        assert response.status == 200 and await response.json() == {"deleted": True}
        assert set(node.view.topics["chat"].subscriptions()) == {"bob"}


async def test_a_body_that_does_not_decode_is_a_bad_request(tmp_path: Path) -> None:
    async with one_node(tmp_path) as (node, http):
        await node.queue("q").push("kept")
        for path in ("/admin/api/queues/queue/q/purge", "/admin/login"):
            for encoding in ("gzip", "deflate"):
                response = await http.post(path, data=b"0123456789", headers={
                    **BEARER, "Content-Encoding": encoding, "Connection": "close"})
                status, code = await error_of(response)
                assert (status, code) == (400, "bad_request"), (path, encoding)
        assert node.queue("q").len() == 1
