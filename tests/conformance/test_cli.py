"""``lazily-queue`` command line: conformance reporting and exit codes, the local demo."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lazily_queue.cli import main

ROOT = Path(__file__).resolve().parents[2]
COLLECTIONS = ROOT / "fixtures" / "collections"


def test_conformance_passes_on_the_project_corpus(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", str(COLLECTIONS), str(ROOT / "fixtures" / "codec")]) == 0
    out = capsys.readouterr().out.splitlines()
    fixtures = sorted(COLLECTIONS.rglob("*.json"))
    assert len(out) == len(fixtures) + 1
    assert all(line.startswith("PASS  ") for line in out[:-1])
    assert "(5 steps; sync async threadsafe)" in "\n".join(out)
    summary = out[-1]
    assert summary.startswith(f"{len(fixtures)} passed, 0 failed")
    ignored = len(list((ROOT / "fixtures" / "codec").rglob("*.json")))
    assert f"{ignored} JSON file(s) ignored" in summary


def test_the_whole_corpus_passes_with_cluster_fixtures_on_a_cluster(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["conformance", str(ROOT / "fixtures")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert all(line.startswith("PASS  ") for line in out[:-1])
    failover = next(line for line in out if "queuecell_fifo_across_leader_failover" in line)
    assert failover.endswith("(11 steps; async on raft3, for kill_leader, restart)")
    local = next(line for line in out if "topiccell_durable_cursor_across_restarts" in line)
    assert local.endswith("(10 steps; sync async threadsafe)")  # a topic restart is local
    assert " 0 failed: " in out[-1] and "(7 with cluster ops on raft3)" in out[-1]


def test_cluster_fixtures_without_a_cluster_are_skipped_with_the_command(
    capsys: pytest.CaptureFixture[str],
) -> None:
    distributed = ROOT / "fixtures" / "distributed"
    assert main(["conformance", str(distributed), "--cluster-backend", "none"]) == 0
    out = capsys.readouterr().out.splitlines()
    skip = next(line for line in out if "queuecell_fifo_across_leader_failover" in line)
    assert skip == (
        "SKIP  queuecell_fifo_across_leader_failover  needs cluster ops (kill_leader, "
        "restart) and no cluster backend (--cluster-backend none); run: lazily-queue "
        f"conformance {distributed}/queuecell_fifo_across_leader_failover.json --backend raft3"
    )
    assert out[-1].startswith("1 passed, 0 failed, 7 skipped: 8 fixtures")
    assert main(["conformance", str(distributed), "--backend", "raft3"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("8 passed, 0 failed")


def test_a_failing_cluster_fixture_fails_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = ROOT / "fixtures" / "distributed" / "queuecell_fifo_across_leader_failover.json"
    doc = json.loads(source.read_text())
    doc["steps"][-1]["expected"]["len"] = 99
    (tmp_path / "broken_failover.json").write_text(json.dumps(doc))
    assert main(["conformance", str(tmp_path)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("FAIL  broken_failover  (11 steps on raft3, for kill_leader, "
                             "restart) [async] step 10: len: expected 99")
    assert main(["conformance", str(tmp_path), "--cluster-backend", "nope"]) == 2
    assert "unknown backend 'nope'" in capsys.readouterr().err


def test_conformance_reports_the_first_mismatch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = json.loads((COLLECTIONS / "queuecell_capacity_three.json").read_text())
    doc["steps"][2]["expected"]["invalidates"]["is_full"] = False
    (tmp_path / "broken.json").write_text(json.dumps(doc))
    shutil.copy(COLLECTIONS / "queuecell_capacity_one.json", tmp_path / "good.json")
    (tmp_path / "other.json").write_text(json.dumps({"kind": "SignalingFrames"}))
    (tmp_path / "notes.json").write_text("not json")
    assert main(["conformance", str(tmp_path), "--flavor", "sync"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (
        "FAIL  broken  (9 steps) [sync] step 2: invalidates.is_full: expected false, got true"
    )
    assert out[1].startswith("PASS  good  (9 steps; sync)")
    assert out[2].startswith("1 passed, 1 failed")
    assert "2 JSON file(s) ignored" in out[2]


def test_conformance_failure_on_every_flavor_is_listed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = json.loads((COLLECTIONS / "queuecell_capacity_one.json").read_text())
    doc["steps"][0]["expected"]["len"] = 7
    path = tmp_path / "wrong_len.json"
    path.write_text(json.dumps(doc))
    assert main(["conformance", str(path)]) == 1
    line = capsys.readouterr().out.splitlines()[0]
    assert line == (
        "FAIL  wrong_len  (9 steps) [sync] step 0: len: expected 7, got 1 "
        "(also fails: async, threadsafe)"
    )


def test_conformance_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", str(COLLECTIONS), "--backend", "nope"]) == 2
    assert "unknown backend 'nope'; known backends: client, local" in capsys.readouterr().err
    assert main(["conformance", str(tmp_path)]) == 2
    assert "no queue-family fixtures" in capsys.readouterr().err
    assert main(["conformance", str(tmp_path / "missing.json")]) == 2
    assert "no such file" in capsys.readouterr().err
    (tmp_path / "frames.json").write_text("{}")
    assert main(["conformance", str(tmp_path / "frames.json")]) == 2
    assert "not a queue-family fixture" in capsys.readouterr().err
    (tmp_path / "deep.json").write_text('{"a":' * 100_000 + "1" + "}" * 100_000)
    assert main(["conformance", str(tmp_path / "deep.json")]) == 2
    assert "deep.json: cannot read JSON: it is nested too deeply" in capsys.readouterr().err
    assert main([]) == 2


def test_demo_verifies_delivery(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["demo", "--local", "--items", "120", "--workers", "3", "--capacity", "4",
                 "--no-progress"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "OK: nothing lost, nothing duplicated" in out
    assert "QueueCell" in out and "WorkQueueCell" in out


def test_demo_rejects_bad_arguments() -> None:
    with pytest.raises(SystemExit, match="--workers must be >= 1"):
        main(["demo", "--workers", "0"])


def test_console_script_runs() -> None:
    script = Path(sys.executable).parent / "lazily-queue"
    if not script.exists():
        pytest.skip("the console script is not installed in this environment")
    done = subprocess.run(
        [str(script), "conformance", str(COLLECTIONS / "queuecell_close_on_empty.json")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("PASS  queuecell_close_on_empty  (5 steps;")


def test_same_names_in_two_trees_are_all_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for tree in ("one", "two"):
        (tmp_path / tree / "collections").mkdir(parents=True)
        shutil.copy(
            COLLECTIONS / "queuecell_close_on_empty.json",
            tmp_path / tree / "collections" / "queuecell_close_on_empty.json",
        )
    assert main(["conformance", str(tmp_path / "one"), str(tmp_path / "two")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 3 and out[2].startswith("2 passed, 0 failed")
