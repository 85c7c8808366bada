"""Ctrl-C in `lazily-queue demo` (and in any subcommand that does not handle it): one
line and status 130, no traceback; the cluster demo stops the nodes it started."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from lazily_queue import cli
from lazily_queue.demo import local


def test_ctrl_c_in_a_subcommand_is_one_line_and_status_130(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def interrupted(config: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(local, "main", interrupted)
    try:
        code = cli.main(["demo", "--local", "--no-progress"])
    except KeyboardInterrupt:
        pytest.fail("Ctrl-C went through `lazily-queue` as a traceback")
    assert code == 130
    err = capsys.readouterr().err
    assert err.strip().splitlines() == ["interrupted: lazily-queue demo stopped by Ctrl-C"]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is gone for our purpose: its parent (the demo) has not reaped it only if
    # the demo itself is gone, which the caller checked first.
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().split(") ", 1)[1][0] != "Z"


@pytest.mark.slow
def test_ctrl_c_in_the_cluster_demo_stops_its_nodes(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "lazily_queue", "demo", "--no-progress", "--dir",
         str(tmp_path / "demo"), "--kill-at", "2", "--rate", "5", "--timeout", "300"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.stdout is not None
    pids: list[int] = []
    try:
        for line in proc.stdout:
            if match := re.search(r"3 nodes up \(pids ([\d, ]+)\)", line):
                pids = [int(p) for p in match.group(1).split(", ")]
                break
        assert pids, "the demo printed no '3 nodes up' line"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert "Traceback" not in err, err
    assert err.strip().splitlines()[-1] == "interrupted: lazily-queue demo stopped by Ctrl-C"
    assert not [pid for pid in pids if alive(pid)]
