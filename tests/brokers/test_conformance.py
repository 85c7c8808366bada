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
}


def _expected_skips() -> int:
    """Work-queue fixtures (logical time), queue batches and cluster ops."""
    skipped = 0
    for path in (p for d in CORPUS for p in d.glob("*.json")):
        doc = json.loads(path.read_text())
        ops = {s["op"]["type"] for s in doc["steps"]}
        if (doc["model"] == "WorkQueueCell" or "batch" in ops
                or not ops <= MODEL_OPS[doc["model"]]):
            skipped += 1
    return skipped


@pytest.mark.parametrize("kind", ["nats", "redis"])
def test_the_corpus_on_a_real_broker(kind: str, request: pytest.FixtureRequest,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    server: BrokerServer = request.getfixturevalue(f"{kind}_server")
    assert main(["conformance", *map(str, CORPUS), "--backend", kind,
                 "--url", server.url]) == 0
    lines = capsys.readouterr().out.splitlines()
    skips = [line for line in lines if line.startswith("SKIP  ")]
    assert all(line.startswith(("PASS  ", "SKIP  ")) for line in lines[:-1])
    assert all(" lacks " in line for line in skips)
    assert len(skips) == _expected_skips()
    assert any("lacks logical_time" in line for line in skips)
    assert any("lacks cluster_ops" in line for line in skips)
    assert ", 0 failed, " in lines[-1]


def test_a_broker_backend_needs_a_url(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", str(CORPUS[0]), "--backend", "redis"]) == 2
    assert "needs --url" in capsys.readouterr().err
    assert main(["conformance", str(CORPUS[0]), "--url", "redis://127.0.0.1:1/0"]) == 2
    assert "takes no --url" in capsys.readouterr().err
