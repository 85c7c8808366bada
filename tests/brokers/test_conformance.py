"""The corpus replayed on real brokers: what a broker cannot run is listed as skipped
with the reason, everything else passes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lazily_queue.brokers.servers import BrokerServer
from lazily_queue.cli import main

ROOT = Path(__file__).resolve().parents[2]
CORPUS = [ROOT / "fixtures" / "collections", ROOT / "fixtures" / "distributed"]


MODEL_OPS = {
    "QueueCell": {"push", "try_push", "pop", "try_pop", "close", "batch"},
    "TopicCell": {"publish", "subscribe", "reconnect", "disconnect", "advance", "gc", "restart"},
    "WorkQueueCell": {"push", "claim", "ack", "nack", "reap_expired"},
}


def _expected_skips() -> tuple[int, int]:
    """(fixtures with cluster ops, other work-queue fixtures and queue batches)."""
    cluster = lacking = 0
    for path in (p for d in CORPUS for p in d.glob("*.json")):
        doc = json.loads(path.read_text())
        ops = {s["op"]["type"] for s in doc["steps"]}
        if not ops <= MODEL_OPS[doc["model"]]:
            cluster += 1
        elif doc["model"] == "WorkQueueCell" or "batch" in ops:
            lacking += 1
    return cluster, lacking


@pytest.mark.parametrize("kind", ["nats", "redis"])
def test_the_corpus_on_a_real_broker(kind: str, request: pytest.FixtureRequest,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    server: BrokerServer = request.getfixturevalue(f"{kind}_server")
    assert main(["conformance", *map(str, CORPUS), "--backend", kind, "--url", server.url,
                 "--cluster-backend", "none"]) == 0
    lines = capsys.readouterr().out.splitlines()
    skips = [line for line in lines if line.startswith("SKIP  ")]
    assert all(line.startswith(("PASS  ", "SKIP  ")) for line in lines[:-1])
    lacking = [line for line in skips if " lacks " in line]
    cluster = [line for line in skips if "needs cluster ops" in line]
    assert (len(cluster), len(lacking)) == _expected_skips()
    assert len(skips) == len(cluster) + len(lacking)
    assert any("lacks logical_time" in line for line in lacking)
    assert any("lacks atomic_batch" in line for line in lacking)
    assert ", 0 failed, " in lines[-1]


def test_a_broker_backend_needs_a_url(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", str(CORPUS[0]), "--backend", "redis"]) == 2
    assert "needs --url" in capsys.readouterr().err
    assert main(["conformance", str(CORPUS[0]), "--url", "redis://127.0.0.1:1/0"]) == 2
    assert "takes no --url" in capsys.readouterr().err
