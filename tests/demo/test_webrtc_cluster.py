"""Node processes over webrtc+ws:// through ``lazily-queue signaling`` with a token: the
demo's three nodes with the leader SIGKILLed and restarted lose nothing acknowledged; a
node with the wrong signaling token stops with one line."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lazily_queue.demo.ledger import Ledger
from tests.cli.node_procs import NodeProc, write_config

pytest.importorskip("aiortc")  # the webrtc extra (in the dev extra)
CLI = [sys.executable, "-m", "lazily_queue"]


@pytest.mark.slow  # about 15 s
def test_three_nodes_over_webrtc_survive_a_killed_leader(tmp_path: Path) -> None:
    work = tmp_path / "demo"
    out = subprocess.run(
        [*CLI, "demo", "--transport", "webrtc", "--dir", str(work), "--items", "120",
         "--rate", "80", "--no-progress", "--timeout", "90"],
        capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout
    assert "OK: nothing lost, nothing applied twice" in text
    assert re.search(r"SIGKILL leader node \d", text) and "restarted node" in text
    tally = Ledger(work / "ledger.sqlite").tally()
    assert tally.lost == 0 and tally.duplicates == 0
    assert tally.pushed + tally.unconfirmed == 360 and tally.processed >= tally.pushed
    config = (work / "node1.toml").read_text()
    assert re.search(r'listen = "webrtc\+ws://127\.0\.0\.1:\d+/demo\?peer=1"', config)
    assert 'signaling_token_env = "LAZILY_DEMO_SIGNALING"' in config
    assert "refused a signaling connection" not in (work / "signaling.log").read_text()


def test_a_wrong_signaling_token_stops_the_node_with_one_line(tmp_path: Path) -> None:
    env = dict(os.environ, SIGNAL_TOKEN="the-right-signaling-token")
    server = subprocess.Popen(
        [*CLI, "signaling", "--listen", "127.0.0.1:0", "--token-env", "SIGNAL_TOKEN"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        assert line.startswith("signaling on ws://127.0.0.1:") and "token required" in line
        url = line.split()[2].replace("ws://", "webrtc+ws://")
        peers = {i: f"{url}/room?peer={i}" for i in (1, 2)}
        config = write_config(tmp_path / "n1.toml", 1, peers,
                              extra='[webrtc]\nsignaling_token_env = "NODE_SIGNAL_TOKEN"')
        node = NodeProc(config, env={"NODE_SIGNAL_TOKEN": "a-wrong-signaling-token"})
        assert node.wait_exit(30) == 2
        errors = [ln for ln in node.stderr().splitlines() if ln.startswith("error:")]
        assert len(errors) == 1
        assert "the token was refused" in errors[0]
        assert "check [webrtc] `signaling_token_env`" in errors[0]
    finally:
        server.terminate()
        server.wait(10)
    assert "refused a signaling connection" in (server.stderr.read() if server.stderr else "")
