"""A member trusts another member's vitals only when they prove they come from a member
of its cluster (a fresh nonce, an HMAC under a key derived from the cluster secret)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any, cast

import aiohttp
import pytest
from aiohttp import web

from lazily_queue import testing
from lazily_queue.integrations.aiohttp import MONITOR, add_monitor_routes
from lazily_queue.monitor import Monitor
from lazily_queue.peer_pages import PeerPages
from lazily_queue.replicated import ops
from lazily_queue.status import node_status
from lazily_queue.vitals_proof import (
    NONCE_HEADER,
    PROOF_HEADER,
    new_nonce,
    parse_nonce,
    prove,
    proven,
    vitals_key,
)
from tests.integrations.canned_pages import Answer, http_page

KEY = vitals_key(b"cluster secret", "lazily-queue")
#: A member's vitals saying its journal is not writable (other figures left out).
FULL: dict[str, Any] = {
    "node": "2", "version": "x", "uptime_s": 5.0,
    "disk": {"free_bytes": 0, "total_bytes": 20},
    "fsync": {"count": 0, "p50_ms": None, "p99_ms": None},
    "journal": {"writable": False, "error": "[Errno 28] No space left on device",
                "snapshot_error": None},
}
BODY = json.dumps(FULL).encode()

def page(headers_for: Answer) -> AbstractAsyncContextManager[str]:
    """A page answering every request with :data:`BODY` and ``headers_for(request
    headers)``."""
    return http_page(lambda: BODY, headers_for)


def signed_with(key: bytes) -> Answer:
    def headers(asked: dict[str, str]) -> dict[str, str]:
        nonce = parse_nonce(asked[NONCE_HEADER.lower()])
        return {PROOF_HEADER: prove(key, nonce, BODY)}
    return headers


#: An answer proven once, for a nonce of its own (kept by whoever saw it go by).
RECORDED = prove(KEY, parse_nonce(new_nonce()), BODY)


@pytest.mark.parametrize("headers_for", [
    lambda asked: {},  # a process squatting the port: no proof
    signed_with(vitals_key(b"another secret", "lazily-queue")),
    signed_with(vitals_key(b"cluster secret", "another cluster")),
    lambda asked: {PROOF_HEADER: RECORDED},  # replayed
    lambda asked: {PROOF_HEADER: "\u00e9" * 64},
], ids=["none", "other-secret", "other-cluster", "replayed", "not-hex"])
async def test_vitals_not_proven_are_refused_and_mark_no_disk(headers_for: Answer,
                                                               tmp_path: Path) -> None:
    """Whoever answers at a member's page address without the cluster's key cannot make
    another member report a full disk or an unwritable journal for it: the answer is
    that member's vitals error, saying they are not proven, and no disk problem."""
    pages = PeerPages(cast(Any, None), key=KEY)
    async with page(headers_for) as url:
        await pages._read("2", url)
    entry = pages.answers["2"]
    assert entry["vitals"] is None and entry["proof"] == "refused"
    assert "not proven to come from a member of this cluster" in entry["error"]
    async with testing.cluster(2, data_dir=tmp_path) as cluster:
        node = cluster.nodes["1"]
        seen = node_status(node, peers=pages.answers)
    member = next(m for m in seen["members"] if m["id"] == "2")
    assert member["disk_problem"] is None and member["vitals_proof"] == "refused"
    assert not any("journal" in r for r in seen["health"]["reasons"])


async def test_proven_vitals_are_shown_and_said_to_be_proven(tmp_path: Path) -> None:
    pages = PeerPages(cast(Any, None), key=KEY)
    async with page(signed_with(KEY)) as url:
        await pages._read("2", url)
    entry = pages.answers["2"]
    assert entry["vitals"] == FULL and entry["proof"] == "proven" and entry["error"] is None
    async with testing.cluster(2, data_dir=tmp_path) as cluster:
        seen = node_status(cluster.nodes["1"], peers=pages.answers)
    assert ("member 2: journal not writable: [Errno 28] No space left on device "
            "(its vitals say so)") in seen["health"]["reasons"]


def test_a_proof_is_checked_against_the_nonce_and_the_body() -> None:
    nonce = parse_nonce(new_nonce())
    proof = prove(KEY, nonce, BODY)
    assert proven(KEY, nonce, BODY, proof) and proven(KEY, nonce, BODY, proof.upper())
    assert not proven(KEY, parse_nonce(new_nonce()), BODY, proof)
    assert not proven(KEY, nonce, BODY + b" ", proof)
    assert not proven(KEY, nonce, BODY, None)
    assert KEY != b"cluster secret" and b"cluster secret" not in KEY


@asynccontextmanager
async def served(monitor: Monitor) -> AsyncIterator[str]:
    app = web.Application()
    app[MONITOR] = monitor
    add_monitor_routes(app, metrics_path=None, status_prefix="")
    app.on_startup.clear()
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        port = cast(Any, site._server).sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


async def test_members_with_the_secret_read_each_others_proven_vitals(tmp_path: Path) -> None:
    """A member's page proves its vitals to a reader's nonce; a read without a nonce (an
    operator's curl) gets the same vitals without a proof; a malformed nonce gets 400."""
    async with testing.cluster(2, data_dir=tmp_path,
                               node_options=lambda n: {"secret": b"cluster secret"}) as cluster:
        leader = await cluster.wait_for_leader()
        other = next(n for n in cluster.nodes.values() if n is not leader)
        assert other.vitals_key == KEY
        async with served(Monitor(other)) as url, aiohttp.ClientSession() as http:
            async with http.get(url + "/vitals.json") as plain:
                assert plain.status == 200 and PROOF_HEADER not in plain.headers
                assert (await plain.json())["node"] == other.node_id
            async with http.get(url + "/vitals.json", headers={NONCE_HEADER: "00ff"}) as bad:
                assert bad.status == 400 and NONCE_HEADER in (await bad.json())["error"][
                    "message"]
            await leader.driver.call(ops.MEMBER_PAGE, [other.node_id, url], timeout=5)
            pages = PeerPages(leader)
            await pages.poll()
        entry = pages.answers[other.node_id]
        assert entry["error"] is None and entry["proof"] == "proven"
        assert entry["vitals"]["node"] == other.node_id
