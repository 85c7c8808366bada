"""The bounded bookkeeping tables of the applied state (client sessions, ended sessions,
kept results, receipts, ephemeral owners, popped elements) show their sizes and bounds
in the status, the metrics and ``lazily-queue status``, and the sizes move as clients
come and go."""

from __future__ import annotations

from typing import Any

import pytest
from rich.console import Console

from lazily_queue import ClientAccess, ClientGrant, Node, connect
from lazily_queue.cli.status_view import _bounded, render
from lazily_queue.metrics import NodeMetrics
from lazily_queue.replicated.receipts import RECEIPTS_TOTAL
from lazily_queue.replicated.session_end import ENDED_KEPT
from lazily_queue.replicated.session_popped import BYTES, ELEMENTS, SESSION_ELEMENTS
from lazily_queue.replicated.session_results import KEPT_BYTES
from lazily_queue.replicated.state_machine import MAX_CLIENT_SESSIONS
from lazily_queue.replicated.work_queues import RECEIPTS_KEPT
from lazily_queue.status import node_status
from tests.client.one_member import TOKEN, one_member

pytestmark = pytest.mark.timeout(60)

OPS_TOKEN = b"token-of-the-ops-client"
ACCESS = ClientAccess([ClientGrant("web", TOKEN, produce=["*"], consume=["*"]),
                       ClientGrant("ops", OPS_TOKEN, produce=["*"])])


def _gauges(metrics: NodeMetrics) -> dict[str, float | None]:
    get = metrics.registry.get_sample_value
    names = ("client_sessions", "client_sessions_limit", "client_session_clients",
             "client_sessions_most_per_client",
             "ended_sessions", "ended_sessions_limit", "kept_result_bytes",
             "kept_result_bytes_limit", "receipts", "receipts_limit", "ephemeral_owners",
             "ephemeral_owned_subscriptions", "work_receipts_limit", "popped_elements",
             "popped_elements_limit", "popped_bytes", "popped_bytes_limit")
    found = {name: get(f"lazily_queue_{name}") for name in names}
    found["work_receipts{jobs}"] = get("lazily_queue_work_receipts", {"name": "jobs"})
    return found


def _tables(node: Node) -> dict[str, Any]:
    doc = node_status(node)
    console = Console(record=True, width=160)
    console.print(*render(doc))
    shown = console.export_text()
    assert "bounded tables" in shown
    tables: dict[str, Any] = doc["tables"]
    assert f"│ client sessions      │ {tables['client_sessions']['count']:>4} │" in shown
    row = next(line for line in shown.splitlines() if "most of one client" in line)
    assert [cell.strip() for cell in row.split("│")[2:4]] == [
        str(tables["client_sessions"]["most_per_client"]), str(MAX_CLIENT_SESSIONS)]
    row = next(line for line in shown.splitlines() if "popped, not back" in line)
    assert [cell.strip() for cell in row.split("│")[2:4]] == [
        str(tables["popped"]["count"]), str(ELEMENTS)]
    return tables


async def test_the_bounded_tables_show_their_sizes_and_bounds() -> None:
    async with one_member(ACCESS) as node:
        assert node.listen is not None
        metrics = NodeMetrics(node)
        await node.work_queue("jobs").push("first")
        tables = _tables(node)
        assert tables == {
            "client_sessions": {"count": 0, "limit": MAX_CLIENT_SESSIONS, "clients": 0,
                                "most_per_client": 0},
            "ended_sessions": {"count": 0, "limit": ENDED_KEPT, "kept_ms": 3_600_000},
            "kept_results": {"bytes": tables["kept_results"]["bytes"], "limit": KEPT_BYTES,
                             "per_client_session": 8 << 20, "per_member_session": 64 << 20},
            "receipts": {"count": 0, "limit": RECEIPTS_TOTAL, "per_work_queue": RECEIPTS_KEPT},
            "ephemeral_owners": {"sessions": 0, "limit": MAX_CLIENT_SESSIONS,
                                 "subscriptions": 0},
            "popped": {"count": 0, "limit": ELEMENTS, "per_session": SESSION_ELEMENTS},
            "popped_bytes": {"bytes": 0, "limit": BYTES},
        }
        member_bytes = tables["kept_results"]["bytes"]
        assert _gauges(metrics) == {
            "client_sessions": 0, "client_sessions_limit": MAX_CLIENT_SESSIONS,
            "client_session_clients": 0, "client_sessions_most_per_client": 0,
            "ended_sessions": 0,
            "ended_sessions_limit": ENDED_KEPT, "kept_result_bytes": member_bytes,
            "kept_result_bytes_limit": KEPT_BYTES, "receipts": 0,
            "receipts_limit": RECEIPTS_TOTAL, "ephemeral_owners": 0,
            "ephemeral_owned_subscriptions": 0, "work_receipts_limit": RECEIPTS_KEPT,
            "popped_elements": 0, "popped_elements_limit": ELEMENTS, "popped_bytes": 0,
            "popped_bytes_limit": BYTES, "work_receipts{jobs}": 0}

        async with connect([node.listen], ("web", TOKEN)) as client:
            await client.queue("q").push("x" * 1000)
            assert await client.queue("q").pop() == "x" * 1000  # its result is kept
            await client.topic("news").subscribe("dashboard", "ephemeral")
            jobs = client.work_queue("jobs")
            delivery = await jobs.claim("w1")
            await jobs.ack("w1", delivery.delivery_id)
            tables = _tables(node)
            assert tables["client_sessions"]["count"] == 1
            assert tables["client_sessions"]["clients"] == 1
            kept = tables["kept_results"]["bytes"]
            assert kept > member_bytes
            assert tables["receipts"]["count"] == 1
            assert tables["ephemeral_owners"]["sessions"] == 1
            assert tables["ephemeral_owners"]["subscriptions"] == 1
            assert tables["popped"]["count"] == 1  # popped, not given back
            assert tables["popped_bytes"]["bytes"] > 1000
            assert node_status(node)["work_queues"]["jobs"]["receipts"] == 1
            gauges = _gauges(metrics)
            assert (gauges["client_sessions"], gauges["client_session_clients"],
                    gauges["receipts"], gauges["work_receipts{jobs}"],
                    gauges["ephemeral_owners"], gauges["ephemeral_owned_subscriptions"]
                    ) == (1, 1, 1, 1, 1, 1)
            assert gauges["kept_result_bytes"] == tables["kept_results"]["bytes"]
            assert (gauges["popped_elements"], gauges["popped_bytes"]) == (
                1, tables["popped_bytes"]["bytes"])

        tables = _tables(node)  # the client closed: its session ended
        assert tables["client_sessions"]["count"] == 0
        assert tables["ended_sessions"]["count"] == 1
        assert tables["kept_results"]["bytes"] < kept
        assert tables["ephemeral_owners"] == {"sessions": 0, "limit": MAX_CLIENT_SESSIONS,
                                              "subscriptions": 0}
        assert tables["receipts"]["count"] == 1
        assert (tables["popped"]["count"], tables["popped_bytes"]["bytes"]) == (0, 0)
        gauges = _gauges(metrics)
        assert (gauges["client_sessions"], gauges["ended_sessions"],
                gauges["ephemeral_owners"]) == (0, 1, 0)


async def test_the_most_sessions_one_client_holds_shows_and_moves() -> None:
    """Two clients named "web" and one named "ops": the most one client holds is 2 (of
    the table's bound), and 1 once one "web" closed."""
    async with one_member(ACCESS) as node:
        assert node.listen is not None
        metrics = NodeMetrics(node)
        get = metrics.registry.get_sample_value
        async with connect([node.listen], ("web", TOKEN)) as web, \
                connect([node.listen], ("ops", OPS_TOKEN)) as ops:
            async with connect([node.listen], ("web", TOKEN)) as other_web:
                for client in (web, ops, other_web):  # each registers its session
                    await client.queue("q").push(1)
                assert _tables(node)["client_sessions"] == {
                    "count": 3, "limit": MAX_CLIENT_SESSIONS, "clients": 2,
                    "most_per_client": 2}
                assert get("lazily_queue_client_sessions_most_per_client") == 2
            sessions = _tables(node)["client_sessions"]
            assert (sessions["count"], sessions["clients"], sessions["most_per_client"]) == (
                2, 2, 1)
            assert get("lazily_queue_client_sessions_most_per_client") == 1
        assert _tables(node)["client_sessions"]["most_per_client"] == 0
        assert get("lazily_queue_client_sessions_most_per_client") == 0


def test_a_status_without_the_most_of_one_client_shows_a_dash() -> None:
    """The status of a node of an earlier version, which does not give the figure."""
    sessions = {"count": 3, "limit": 10, "clients": 2}
    status = {"tables": {
        "client_sessions": sessions, "ended_sessions": {"count": 0, "limit": 5, "kept_ms": 0},
        "kept_results": {"bytes": 0, "limit": 9, "per_client_session": 1},
        "receipts": {"count": 0, "limit": 4, "per_work_queue": 2},
        "ephemeral_owners": {"sessions": 0, "limit": 10, "subscriptions": 0}}}
    console = Console(record=True, width=160)
    console.print(_bounded(status["tables"]))
    assert "│ most of one client   │    - │    10 │    - │" in console.export_text()


class _Unwalkable(dict[Any, Any]):
    """A table that fails when walked: only its size may be read."""

    def __iter__(self) -> Any:
        raise AssertionError("a table was walked for its size")

    def values(self) -> Any:
        raise AssertionError("a table was walked for its size")

    def items(self) -> Any:
        raise AssertionError("a table was walked for its size")


def test_the_sizes_are_read_without_walking_a_table() -> None:
    from collections import OrderedDict

    from lazily_queue.replicated.state_machine import StateMachine
    from lazily_queue.replicated.view import ReadView

    class UnwalkableOrdered(_Unwalkable, OrderedDict[Any, Any]):
        pass

    sm = StateMachine()
    sm.client_counts.order = _Unwalkable({1: OrderedDict.fromkeys((11, 12)),
                                          2: OrderedDict.fromkeys((21,))})
    sm.client_counts.total = 3
    sm.client_counts.most = 2
    sm.sessions = UnwalkableOrdered()
    sm.ended.ended = UnwalkableOrdered({5: 0})
    sm.ephemeral_owners.alive = _Unwalkable({7: 0})
    sm.ephemeral_owners.owner = _Unwalkable({("t", "s"): 7, ("t", "u"): 7})
    sm.ephemeral_owners.by_session = _Unwalkable()
    tables = ReadView(sm).table_sizes()
    assert tables["client_sessions"] == {"count": 3, "limit": MAX_CLIENT_SESSIONS,
                                         "clients": 2, "most_per_client": 2}
    assert tables["ended_sessions"]["count"] == 1
    assert tables["ephemeral_owners"] == {"sessions": 1, "limit": MAX_CLIENT_SESSIONS,
                                          "subscriptions": 2}
