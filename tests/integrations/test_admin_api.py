"""The admin API: the token, browser sessions with CSRF, cross-site refusals, typed errors,
and each action's effect on the replicated data (three in-process nodes)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from lazily_queue import testing
from lazily_queue.admin_auth import COOKIE, CSRF_HEADER
from lazily_queue.integrations.aiohttp import setup
from lazily_queue.node import Node
from lazily_queue.replicated import ops

TOKEN = "admin-token-for-tests-0123"
BEARER = {"Authorization": f"Bearer {TOKEN}"}


@contextlib.asynccontextmanager
async def clients(tmp_path: Path, token: str | None = TOKEN) -> AsyncIterator[
        tuple[testing.Cluster, dict[str, TestClient[Any, Any]]]]:
    cluster = testing.cluster(data_dir=tmp_path, maintenance_interval=0.05)
    async with contextlib.AsyncExitStack() as stack:
        by_node: dict[str, TestClient[Any, Any]] = {}
        for node in cluster.nodes.values():
            app = web.Application()
            setup(app, node, status_prefix="", admin_token=token)
            by_node[node.node_id] = await stack.enter_async_context(
                TestClient(TestServer(app)))
        await cluster.wait_for_leader()
        yield cluster, by_node
        await stack.aclose()


async def error_of(response: Any) -> tuple[int, str]:
    doc = await response.json()
    return response.status, doc["error"]["code"]


async def test_who_may_act(tmp_path: Path) -> None:
    async with clients(tmp_path) as (_, by_node):
        http = next(iter(by_node.values()))
        assert await error_of(await http.get("/admin/api/queues")) == (401, "unauthorized")
        wrong = {"Authorization": "Bearer not-the-token-at-all"}
        assert await error_of(await http.get("/admin/api/queues", headers=wrong)) == (
            401, "unauthorized")
        ok = await http.get("/admin/api/queues", headers=BEARER)
        assert ok.status == 200 and await ok.json() == {"queues": []}
        assert await error_of(await http.get("/admin/api/queue", headers=BEARER)) == (
            404, "not_found")  # a mistyped route is answered as every error is
        wrong_method = await http.get("/admin/api/members/2/remove", headers=BEARER)
        assert wrong_method.headers["Allow"] == "POST"
        assert await error_of(wrong_method) == (405, "method_not_allowed")
        either = await http.delete("/admin/api/members", headers=BEARER)
        assert either.headers["Allow"] == "GET, POST"
        assert await error_of(either) == (405, "method_not_allowed")
        assert await error_of(await http.get("/admin/api/queue")) == (401, "unauthorized")
        # Another site can neither act with the token nor with a session.
        evil = {**BEARER, "Origin": "http://evil.example"}
        assert await error_of(await http.get("/admin/api/queues", headers=evil)) == (
            403, "cross_origin")
        cross = {**BEARER, "Sec-Fetch-Site": "cross-site"}
        assert await error_of(await http.post("/admin/api/queues/queue/q/purge",
                                              headers=cross)) == (403, "cross_origin")
        assert await error_of(await http.post("/admin/login", json={"token": TOKEN},
                                              headers={"Origin": "http://evil.example"})) == (
            403, "cross_origin")

        # A browser: log in, then changes need the CSRF token too.
        assert await error_of(await http.post("/admin/login", json={"token": "nope"})) == (
            401, "unauthorized")
        assert (await (await http.get("/admin/session")).json())["authenticated"] is False
        login = await http.post("/admin/login", json={"token": TOKEN})
        assert login.status == 200
        cookie = login.cookies[COOKIE]
        assert cookie["httponly"] and cookie["samesite"] == "Strict"
        csrf = (await login.json())["csrf"]
        session = await (await http.get("/admin/session")).json()
        assert session == {"enabled": True, "authenticated": True, "csrf": csrf}
        assert (await http.get("/admin/api/queues")).status == 200  # reads: the cookie
        assert await error_of(await http.post("/admin/api/queues/queue/q/purge")) == (
            403, "csrf")
        assert await error_of(await http.post("/admin/api/queues/queue/q/purge",
                                              headers={CSRF_HEADER: "forged"})) == (403, "csrf")
        same_origin = {CSRF_HEADER: csrf, "Origin": str(http.make_url("")).rstrip("/"),
                       "Sec-Fetch-Site": "same-origin"}
        assert await error_of(await http.post("/admin/api/queues/queue/q/purge",
                                              headers=same_origin)) == (404, "not_found")
        assert (await http.post("/admin/logout", headers=same_origin)).status == 200
        assert await error_of(await http.post("/admin/api/queues/queue/q/purge",
                                              headers=same_origin)) == (401, "unauthorized")


async def test_without_a_token_the_api_says_how_to_turn_it_on(tmp_path: Path) -> None:
    cluster = testing.cluster(data_dir=tmp_path)
    node = cluster.node(1)
    app = web.Application()
    setup(app, node, status_prefix="")
    from lazily_queue.integrations.aiohttp_admin import add_admin_routes

    add_admin_routes(app, None)
    async with TestClient(TestServer(app)) as http:
        response = await http.get("/admin/api/queues", headers=BEARER)
        assert response.status == 403
        error = (await response.json())["error"]
        assert error["code"] == "admin_disabled" and "admin_token_env" in error["message"]
        assert (await (await http.get("/admin/session")).json())["enabled"] is False


async def test_actions_change_the_replicated_data(tmp_path: Path) -> None:
    async with clients(tmp_path) as (cluster, by_node):
        leader = await cluster.leader()
        follower = (await cluster.followers())[0]
        http = by_node[follower.node_id]  # actions taken on a follower go through the log

        async def post(path: str, body: dict[str, Any] | None = None) -> Any:
            response = await http.post("/admin/api" + path, json=body or {}, headers=BEARER)
            return response.status, await response.json()

        orders = leader.queue("orders")
        for i in range(3):
            await orders.push(i)
        jobs = leader.work_queue("jobs", visibility_timeout=30, max_deliveries=1)
        for i in range(5):
            await jobs.push(i)
        for _ in range(3):
            delivery = await jobs.claim("w")
            await jobs.nack("w", delivery.delivery_id)  # dead at once
        await leader.topic("news").publish("x")
        listing = (await (await http.get("/admin/api/queues", headers=BEARER)).json())["queues"]
        assert [(q["kind"], q["name"], q["depth"]) for q in listing] == [
            ("queue", "orders", 3), ("work_queue", "jobs", 2), ("topic", "news", 1)]

        assert await post("/queues/queue/orders/purge") == (200, {"removed": 3})
        await cluster.settle()
        assert all(n.view.queue("orders").len() == 0 for n in cluster.running)
        await orders.push("after purge")  # still declared
        assert orders.len() == 1

        letters = await http.get("/admin/api/dlq/jobs?limit=2", headers=BEARER)
        page = await letters.json()
        assert page["total"] == 3 and [d["item_id"] for d in page["dead_letters"]] == [0, 1]
        assert page["dead_letters"][0]["reason"] == "nack"
        assert await post("/dlq/jobs/redrive", {"item_ids": [1]}) == (200, {"redriven": 1})
        assert await post("/dlq/jobs/redrive") == (200, {"redriven": 2})
        await cluster.settle()
        assert jobs.dead_letter_len() == 0 and jobs.pending_len() == 5
        assert [p.item_id for p in jobs.pending()][-3:] == [1, 0, 2]
        assert await post("/queues/work_queue/jobs/purge") == (200, {"removed": 5})
        assert await post("/queues/work_queue/jobs/purge", {"dead_letters": True}) == (
            200, {"removed": 0})

        assert await post("/queues/topic/news/delete") == (200, {"deleted": True, "held": 1})
        assert await post("/queues/queue/orders/delete") == (200, {"deleted": True, "held": 1})
        await cluster.settle()
        assert "orders" not in leader.view.queues and "news" not in leader.view.topics
        await orders.push("declared again")  # the open cell declares it anew
        await cluster.settle()
        assert follower.view.queue("orders").len() == 1

        # Typed errors.
        assert (await post("/queues/queue/nope/delete"))[1]["error"]["code"] == "not_found"
        assert (await post("/queues/shelf/x/purge"))[1]["error"]["code"] == "bad_request"
        assert (await post("/queues/topic/x/purge"))[1]["error"]["code"] == "bad_request"
        assert (await post("/dlq/jobs/redrive", {"item_ids": ["a"]}))[1]["error"][
            "code"] == "bad_request"
        bad_json = await http.post("/admin/api/dlq/jobs/redrive", data=b"{",
                                   headers=BEARER)
        assert await error_of(bad_json) == (400, "bad_request")
        assert (await http.get("/admin/api/dlq/jobs?limit=x", headers=BEARER)).status == 400


async def test_membership_and_leadership(tmp_path: Path) -> None:
    async with clients(tmp_path) as (cluster, by_node):
        leader = await cluster.leader()
        follower = (await cluster.followers())[0]
        members = await (await by_node[follower.node_id].get(
            "/admin/api/members", headers=BEARER)).json()
        assert [(m["id"], m["role"]) for m in members["members"]] == [
            (n, "leader" if n == leader.node_id else "follower") for n in ("1", "2", "3")]

        answer = await by_node[follower.node_id].post(
            "/admin/api/leadership", json={"to": follower.node_id}, headers=BEARER)
        error = (await answer.json())["error"]
        assert answer.status == 409 and error["code"] == "not_leader"
        assert error["leader"] == leader.node_id
        assert error["message"].startswith(  # says where the leader is, page or not
            f"node {follower.node_id} is not the leader; leadership transfers are made on "
            f"the leader, and node {leader.node_id} leads: ask it")
        answer = await by_node[follower.node_id].post(
            f"/admin/api/members/{leader.node_id}/remove", headers=BEARER)
        assert f"node {leader.node_id} leads: ask it" in (await answer.json())["error"][
            "message"]
        answer = await by_node[leader.node_id].post(
            "/admin/api/leadership", json={"to": follower.node_id}, headers=BEARER)
        assert answer.status == 200 and (await answer.json()) == {"leader": follower.node_id}

        new_leader: Node = await cluster.leader()
        assert new_leader is follower
        gone = leader.node_id
        http = by_node[new_leader.node_id]
        answer = await http.post(f"/admin/api/members/{gone}/remove", headers=BEARER)
        assert answer.status == 200, await answer.text()
        assert gone not in new_leader.driver.replica.engine.members
        answer = await http.post("/admin/api/members/99/remove", headers=BEARER)
        assert await error_of(answer) == (404, "not_found")
        for address in ("bogus://x", "tcp://127.0.0.1"):  # no member could listen there
            answer = await http.post("/admin/api/members", json={"id": 7, "address": address},
                                     headers=BEARER)
            assert await error_of(answer) == (400, "bad_request")
        assert "7" not in new_leader.driver.replica.engine.members
        assert new_leader.view.address("7") is None


async def test_the_leader_asked_to_remove_itself_hands_over_and_names_the_new_leader(
        tmp_path: Path) -> None:
    async with clients(tmp_path) as (cluster, by_node):
        leader = await cluster.leader()
        gone = leader.node_id
        await leader.driver.call(ops.MEMBER_ADDRESS, [gone, "tcp://127.0.0.1:9"], timeout=2)
        started = time.monotonic()
        answer = await by_node[gone].post(f"/admin/api/members/{gone}/remove", headers=BEARER)
        error = (await answer.json())["error"]
        assert (answer.status, error["code"]) == (409, "not_leader"), error
        assert time.monotonic() - started < leader.op_timeout  # no waiting for the deadline
        new_leader = await cluster.leader()
        assert new_leader is not leader and error["leader"] == new_leader.node_id
        assert error["message"] == (
            f"node {gone} handed leadership to node {new_leader.node_id} so that it can be "
            f"removed; membership changes are made on the leader: ask node "
            f"{new_leader.node_id}")
        assert gone in new_leader.driver.replica.engine.members  # nothing half-removed
        # What the CLI does with a not_leader answer: ask the leader it names.
        answer = await by_node[new_leader.node_id].post(f"/admin/api/members/{gone}/remove",
                                                        headers=BEARER)
        assert answer.status == 200, await answer.text()
        for node in cluster.running:
            if node is not leader:
                await node.barrier()
                assert gone not in node.driver.replica.engine.members
                assert node.view.address(gone) is None
