"""``lazily-queue demo``: three real node processes, the leader SIGKILLed, verified."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from lazily_queue.demo.ledger import Ledger


@pytest.mark.slow  # about 7 s alone, over 10 s on a loaded machine
def test_demo_kills_the_leader_and_loses_nothing(tmp_path: Path) -> None:
    work = tmp_path / "demo"
    out = subprocess.run(
        [sys.executable, "-m", "lazily_queue", "demo", "--dir", str(work), "--items", "150",
         "--rate", "100", "--no-progress"],
        capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout
    assert "OK: nothing lost, nothing applied twice" in text
    assert re.search(r"│ lost\s+│\s+0 │", text) and re.search(r"│ duplicates\s+│\s+0 │", text)
    assert re.search(r"SIGKILL leader node \d", text)
    failover = re.search(r"│ failover\s+│\s+(\d+) ms │", text)
    assert failover and 0 < int(failover.group(1)) < 5000
    assert "in sync" in text
    tally = Ledger(work / "ledger.sqlite").tally()
    assert tally.pushed + tally.unconfirmed == 450
    assert tally.lost == 0 and tally.duplicates == 0 and tally.processed >= tally.pushed
    config = (work / "node1.toml").read_text()  # the secret reaches nodes by environment only
    assert 'secret_env = "LAZILY_DEMO_SECRET"' in config and "secret_file" not in config


def test_demo_reports_a_run_that_cannot_finish(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "lazily_queue", "demo", "--dir", str(tmp_path / "demo"),
         "--items", "2000", "--rate", "50", "--timeout", "4", "--kill-at", "2",
         "--no-progress"],
        capture_output=True, text=True, timeout=120)
    assert out.returncode == 1
    assert "did not finish within 4s" in out.stdout
    assert "FAILED" in out.stdout


def test_demo_refuses_to_empty_a_foreign_directory(tmp_path: Path) -> None:
    (tmp_path / "precious.txt").write_text("keep me")
    out = subprocess.run(
        [sys.executable, "-m", "lazily_queue", "demo", "--dir", str(tmp_path)],
        capture_output=True, text=True, timeout=60)
    assert out.returncode != 0
    assert "is not a demo directory" in out.stderr + out.stdout
    assert (tmp_path / "precious.txt").read_text() == "keep me"


def test_demo_refuses_a_dir_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("keep me")
    out = subprocess.run(
        [sys.executable, "-m", "lazily_queue", "demo", "--dir", str(tmp_path / "notes.txt")],
        capture_output=True, text=True, timeout=60)
    assert out.returncode != 0
    assert out.stderr == f"error: {tmp_path / 'notes.txt'} is not a directory; choose another "\
        "--dir\n", out.stderr
    assert (tmp_path / "notes.txt").read_text() == "keep me"


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [("--rate", "nan", "--rate, --visibility-timeout and --timeout must be finite numbers > 0"),
     ("--timeout", "1e400", "must be finite numbers > 0"),
     ("--kill-at", "nan", "--kill-at must be a share >= 0 of the pushes"),
     ("--fail-rate", "nan", "--fail-rate must be in [0, 0.5)")],
)
def test_demo_refuses_a_number_it_cannot_run_with(
    tmp_path: Path, option: str, value: str, message: str
) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "lazily_queue", "demo", "--dir", str(tmp_path / "d"), option,
         value], capture_output=True, text=True, timeout=60)
    assert out.returncode != 0
    assert out.stderr.startswith("error: ") and message in out.stderr, out.stderr
    assert out.stderr.count("\n") == 1  # one line, no traceback
    assert not (tmp_path / "d").exists()
