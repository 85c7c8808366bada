"""``benchmarks/peers.py`` runs end to end, prints every row and ends with one JSON line;
a peer that is not installed is skipped with an install hint, never a traceback."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "peers.py"
sys.path.insert(0, str(ROOT))

from benchmarks.peers import over_rounds  # noqa: E402
from benchmarks.peers_common import ROWS  # noqa: E402


def _run(args: list[str], env: dict[str, str] | None = None) -> tuple[list[str], dict]:
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True,
                          timeout=280, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()
    return lines, json.loads(lines[-1])


@pytest.mark.slow
def test_lazily_queue_fills_every_row_and_ratios_match() -> None:
    with_persist = importlib.util.find_spec("persistqueue") is not None
    lines, figures = _run([str(SCRIPT), "--only", "lazily,persist", "--count", "300",
                           "--samples", "20", "--json"])
    assert figures["count"] == 300 and figures["samples"] == 20
    ours = figures["systems"]["lazily"]
    for row in ROWS:
        assert ours[row.key] > 0, row.key
        assert any(line.startswith(f"| {row.label} ") for line in lines), row.label
    if with_persist:
        peer = figures["systems"]["persist"]
        ratio = figures["ratios"]["persist"]
        shared = [row.key for row in ROWS if row.compared and row.key in peer]
        assert shared and set(ratio) == set(shared)
        for key in shared:
            assert ratio[key] == pytest.approx(ours[key] / peer[key], rel=1e-2, abs=1e-3)
    else:
        assert ("pip install -e '.[bench]' in the lazily-queue clone"
                in figures["skipped"]["persist"])
        assert figures["ratios"] == {}


def test_rounds_give_median_figures_and_the_median_of_each_rounds_ratio() -> None:
    rounds = [
        {"lazily": {"p50_ms_1": 0.5, "produce_per_s": 300}, "persist": {"p50_ms_1": 0.25}},
        {"lazily": {"p50_ms_1": 0.9, "produce_per_s": 100}, "persist": {"p50_ms_1": 0.3}},
        {"lazily": {"p50_ms_1": 0.3, "produce_per_s": 200}, "persist": {"error": "boom"}},
    ]
    results, ratio = over_rounds(rounds)
    assert results["lazily"] == {"p50_ms_1": 0.5, "produce_per_s": 200}
    assert results["persist"] == {"p50_ms_1": 0.275}  # the failed round left out
    assert ratio == {"persist": {"p50_ms_1": 2.5}}  # of 2.0 and 3.0, each within a round
    failed, none = over_rounds([{"persist": {"error": "boom"}}])
    assert failed == {"persist": {"error": "boom"}} and none == {}


@pytest.mark.slow
def test_several_rounds_report_medians_and_keep_each_round() -> None:
    lines, figures = _run([str(SCRIPT), "--only", "lazily", "--latency", "--samples", "20",
                           "--rounds", "2", "--json"])
    assert figures["rounds"] == 2 and len(figures["each_round"]) == 2
    assert sum(line.startswith("-- round ") for line in lines) == 2
    each = [one["lazily"]["p50_ms_1"] for one in figures["each_round"]]
    assert figures["systems"]["lazily"]["p50_ms_1"] == pytest.approx(sum(each) / 2, abs=1e-3)
    assert any(line.startswith("- 2 rounds, the systems taking turns") for line in lines)


@pytest.mark.slow
def test_latency_runs_only_the_one_in_flight_rows() -> None:
    lines, figures = _run([str(SCRIPT), "--only", "lazily", "--latency", "--samples", "20",
                           "--json"])
    ours = figures["systems"]["lazily"]
    assert {"p50_ms_3", "p99_ms_3", "p50_ms_1", "p99_ms_1"} <= set(ours)
    assert not {"produce_per_s", "end_to_end_per_s", "serial_pop_per_s_1"} & set(ours)
    assert any(line.startswith("| push->ack p50, 1 in flight, 3 members ") for line in lines)


def test_missing_servers_are_skipped_with_an_install_hint(tmp_path: Path) -> None:
    env = dict(os.environ, PATH=str(tmp_path))  # neither nats-server nor redis-server
    lines, figures = _run(["-m", "lazily_queue", "bench", "peers", "--only",
                           "nats,redis,rabbitmq", "--count", "10", "--samples", "1", "--json"],
                          env=env)
    assert figures["systems"] == {}
    assert figures["skipped"] == {
        "nats": "nats-server not found: apt install nats-server",
        "redis": "redis-server not found: apt install redis-server",
        "rabbitmq": "rabbitmq-server not found: apt install rabbitmq-server",
    }
    assert "NATS JetStream R3: skipped (nats-server not found: apt install nats-server)" in lines
    assert ("RabbitMQ quorum queue (1 node): skipped (rabbitmq-server not found: apt install "
            "rabbitmq-server)") in lines


def test_rabbitmq_without_its_python_client_is_skipped_with_the_extra_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
        ) -> None:
    import argparse
    import asyncio

    from benchmarks import peers

    fake = tmp_path / "rabbitmq-server"
    fake.write_text("#!/bin/sh\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *rest: None if name == "aiormq" else find_spec(name, *rest))
    args = argparse.Namespace(count=10, samples=1, rounds=1, latency=False)
    figures = asyncio.run(peers.main_async(args, ["rabbitmq"]))
    why = "Python client aiormq missing: pip install -e '.[bench]' in the lazily-queue clone"
    assert figures["systems"] == {} and figures["skipped"] == {"rabbitmq": why}
    printed = capsys.readouterr().out.splitlines()
    assert f"RabbitMQ quorum queue (1 node): skipped ({why})" in printed


@pytest.mark.slow
def test_rabbitmq_fills_its_rows_when_installed() -> None:
    from benchmarks import peers

    why = peers.SYSTEMS["rabbitmq"][1]()
    if why is not None:
        pytest.skip(why)
    lines, figures = _run([str(SCRIPT), "--only", "rabbitmq", "--count", "200", "--samples",
                           "20", "--json"])
    theirs = figures["systems"]["rabbitmq"]
    for key in ("produce_per_s", "end_to_end_per_s", "work_queue_per_s", "fanout_per_s",
                "p50_ms_3", "p99_ms_3", "p50_ms_1", "p99_ms_1"):
        assert theirs[key] > 0, key
    assert theirs["p50_ms_1"] == theirs["p50_ms_3"]  # one node fills both latency rows
    assert any(line.startswith("| figure ") and "RabbitMQ quorum queue (1 node)" in line
               for line in lines)
    assert any("quorum queues" in note and "publisher confirms" in note
               for note in figures["notes"])


def test_a_peer_that_fails_to_start_is_one_line(tmp_path: Path) -> None:
    pytest.importorskip("nats")
    fake = tmp_path / "nats-server"
    fake.write_text("#!/bin/sh\necho 'cannot open the store'\nexit 1\n")
    fake.chmod(0o755)
    env = dict(os.environ, PATH=f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    lines, figures = _run([str(SCRIPT), "--only", "nats", "--count", "10", "--samples", "1",
                           "--json"], env=env)
    error = figures["systems"]["nats"]["error"]
    assert error.startswith("RuntimeError: nats-server exited (1)")
    assert "cannot open the store" in error
    assert f"NATS JetStream R3: failed: {error}" in lines


def test_an_unknown_system_is_refused_in_one_line() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--only", "kafka"],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode != 0
    assert ("unknown system(s) kafka; choose from lazily, nats, redis, rabbitmq, persist"
            in done.stderr)
    assert "Traceback" not in done.stderr


def test_nats_stream_creation_waits_for_placement_peers_and_no_longer() -> None:
    """A cluster whose meta leader has not yet heard from three servers answers "no
    suitable peers for placement": retried; any other bad request is raised."""
    import asyncio

    nats_errors = pytest.importorskip("nats.js.errors")
    from nats.js.api import RetentionPolicy

    from benchmarks import peers_nats

    class _JetStream:
        def __init__(self, failures: list[Exception]) -> None:
            self.failures = failures
            self.calls = 0

        async def add_stream(self, **_: object) -> None:
            self.calls += 1
            if self.failures:
                raise self.failures.pop(0)

    def no_peers() -> Exception:
        return nats_errors.BadRequestError(code=400, err_code=10005,
                                           description="no suitable peers for placement")

    js = _JetStream([no_peers(), no_peers()])
    assert asyncio.run(peers_nats.stream(js, "S", RetentionPolicy.LIMITS)) == "S"  # type: ignore[arg-type]
    assert js.calls == 3
    other = _JetStream([nats_errors.BadRequestError(code=400, err_code=10058,
                                                    description="stream name in use")])
    with pytest.raises(nats_errors.BadRequestError):
        asyncio.run(peers_nats.stream(other, "S", RetentionPolicy.LIMITS))  # type: ignore[arg-type]
    assert other.calls == 1
