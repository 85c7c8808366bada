"""The corpus replayed on real brokers: what a broker cannot run is listed as skipped
with the reason, everything else passes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lazily_queue.brokers.servers import BrokerServer
from lazily_queue.cli import main
from lazily_queue.conformance.brokers import LACKS, NATS_LACKS
from lazily_queue.conformance.work_queue import work_queue_needs

BACKEND_LACKS = {"nats": NATS_LACKS, "redis": LACKS}

ROOT = Path(__file__).resolve().parents[2]
CORPUS = [ROOT / "fixtures" / "collections", ROOT / "fixtures" / "distributed"]


MODEL_OPS = {
    "QueueCell": {"push", "try_push", "pop", "try_pop", "close", "batch"},
    "TopicCell": {"publish", "subscribe", "reconnect", "disconnect", "advance", "gc", "restart",
                  "delete_subscriber"},
    "WorkQueueCell": {"push", "claim", "ack", "nack", "reap_expired"},
}


def _cluster_fixtures() -> int:
    """Fixtures with ops beyond their model's (cluster ops)."""
    cluster = 0
    for path in (p for d in CORPUS for p in d.glob("*.json")):
        doc = json.loads(path.read_text())
        ops = {s["op"]["type"] for s in doc["steps"]}
        if not ops <= MODEL_OPS[doc["model"]]:
            cluster += 1
    return cluster


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
    assert len(cluster) == _cluster_fixtures()
    assert len(skips) == len(cluster) + len(lacking)
    assert ", 0 failed, " in lines[-1]
    by_name = {line.split()[1]: line for line in lines[:-1]}
    # every skipped fixture says which capability it needs and why the broker lacks it
    for line in lacking:
        for part in line.split("  ", 2)[2].split("; "):
            name, _, reason = part.partition(": ")
            assert name.split()[0] == "lacks" and name.split()[1] in BACKEND_LACKS[kind]
            assert reason == BACKEND_LACKS[kind][name.split()[1]]
    assert "lacks logical_time" in by_name["workqueue_lease_live_at_deadline"]
    assert "lacks tail_requeue" in by_name["workqueue_requeue_at_tail"]
    assert "lacks atomic_batch" in by_name["queuecell_batch_fills_bounded"]
    assert "lacks subscriber_delete" in by_name["topiccell_delete_subscriber_connected"]
    # a work-queue fixture that needs none of those runs (and passes) on Redis
    pending_only = by_name["workqueue_is_empty_pending_only"]
    if kind == "redis":
        assert pending_only.startswith("PASS  ")
    else:
        assert "lacks redelivery_view" in pending_only


def test_a_work_queue_fixture_needs_what_its_steps_use() -> None:
    def step(op: dict[str, Any], returns: Any, pending: list[Any]) -> dict[str, Any]:
        return {"op": op, "returns": returns, "expected": {"pending": pending}}

    fresh = {"item_id": 0, "value": "a", "attempts": 0}
    again = {"item_id": 0, "value": "a", "attempts": 1}
    younger = {"item_id": 1, "value": "b", "attempts": 0}
    claim = {"type": "claim", "worker": "w", "now": 0}
    lease = {"delivery_id": 0, "deadline": 10}
    steady = [step({"type": "push", "value": "a"}, 0, [fresh]), step(claim, lease, [])]
    assert work_queue_needs({"steps": steady}) == set()
    late = {**claim, "now": 11}
    assert work_queue_needs({"steps": [*steady, step(late, None, [])]}) == {"logical_time"}
    at_deadline = {**claim, "now": 10}
    assert work_queue_needs({"steps": [*steady, step(at_deadline, None, [])]}) == set()
    nack = {"type": "nack", "worker": "w", "delivery_id": 0}
    assert work_queue_needs({"steps": [*steady, step(nack, True, [again])]}) == {
        "redelivery_view"}
    assert work_queue_needs({"steps": [*steady, step(nack, True, [younger, again])]}) == {
        "redelivery_view", "tail_requeue"}
    settled = [*steady, step(nack, True, [again]), step(late, None, [])]
    assert work_queue_needs({"steps": settled}) == {"redelivery_view"}


def test_a_broker_backend_needs_a_url(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", str(CORPUS[0]), "--backend", "redis"]) == 2
    assert "needs --url" in capsys.readouterr().err
    assert main(["conformance", str(CORPUS[0]), "--url", "redis://127.0.0.1:1/0"]) == 2
    assert "takes no --url" in capsys.readouterr().err


@pytest.mark.parametrize(("backend", "url", "said", "code"), [
    ("redis", "redis://127.0.0.1:1/0", "redis at redis://127.0.0.1:1/0 is unreachable", 1),
    ("nats", "redis://127.0.0.1:1/0", "backend 'nats' cannot use 'redis://127.0.0.1:1/0'", 2),
    ("nats", "nats://h:port", "its port 'port' is not a number", 2),
])
def test_a_broker_url_that_cannot_be_used_is_one_line_before_any_replay(
        capsys: pytest.CaptureFixture[str], backend: str, url: str, said: str,
        code: int) -> None:
    assert main(["conformance", *map(str, CORPUS), "--backend", backend, "--url", url]) == code
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"error: --url {url}: ") and said in err
    assert err.endswith("; nothing was replayed\n") and err.count("\n") == 1


def test_a_work_queue_replay_on_redis_can_fail(redis_server: BrokerServer, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    source = ROOT / "fixtures" / "collections" / "workqueue_is_empty_pending_only.json"
    doc = json.loads(source.read_text())
    claim = next(s for s in doc["steps"] if s["op"]["type"] == "claim")
    claim["returns"]["item_id"] += 1  # a wrong id: the renamed broker id must not match
    (tmp_path / "mutated.json").write_text(json.dumps(doc))
    assert main(["conformance", str(tmp_path), "--backend", "redis",
                 "--url", redis_server.url]) == 1
    assert "FAIL" in capsys.readouterr().out
