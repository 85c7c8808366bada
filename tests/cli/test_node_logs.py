"""Logs of ``lazily-queue node``: one line per state change (text or JSON lines), and
``--log-level error`` silences the transport's warnings."""

from __future__ import annotations

import json
import logging
import signal
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from lazily_queue.logs import JsonFormatter
from lazily_queue.state_log import SETTLING, StateLog

from .node_procs import NodeProc, unix_peers, wait_for, write_config


def _events(proc: NodeProc) -> list[dict[str, Any]]:
    lines = [line for line in proc.stderr().splitlines() if line.strip()]
    docs = [json.loads(line) for line in lines]  # every line is one JSON object
    return [d for d in docs if "event" in d]


def test_state_changes_as_json_lines(tmp_path: Path) -> None:
    peers = unix_peers(tmp_path)
    configs = [write_config(tmp_path / f"n{i}.toml", i, peers) for i in (1, 2, 3)]
    procs = [NodeProc(c, args=("--log-format", "json")) for c in configs]
    try:
        for p in procs:
            p.wait_ready()
            p.wait_line("leader ")
        leader = procs[0].status()["leader"]
        watcher = next(p for p in procs if p.status()["node"] == leader)
        victim = next(p for p in procs if p is not watcher)
        victim_id = victim.status()["node"]
        wait_for(lambda: any(e["event"] == "leader_elected" and e["leader"] == leader
                             for e in _events(watcher)), what="leader_elected")
        def victim_lost() -> list[dict[str, Any]]:
            return [e for e in _events(watcher)
                    if e["event"] == "member_lost" and e["member"] == victim_id]

        earlier = len(victim_lost())  # a link that flapped while the members started
        victim.proc.send_signal(signal.SIGKILL)
        victim.proc.wait(10)
        lost = wait_for(lambda: victim_lost()[earlier:], what="member_lost")
        assert lost[0]["member"] == victim_id and lost[0]["level"] == "WARNING"
        assert lost[0]["node"] == leader and lost[0]["logger"] == "lazily_queue.state"
        reason = lost[0]["reason"]  # why the link ended: closed or reset, and what to check
        assert reason.startswith("its link ended (") and f"node {victim_id} runs" in reason
        assert lost[0]["message"] == f"node {leader}: member {victim_id} lost: {reason}"
        procs[procs.index(victim)] = NodeProc(configs[procs.index(victim)],
                                              args=("--log-format", "json"))
        back = wait_for(lambda: [e for e in _events(watcher) if e["event"] == "member_back"
                                 and e["member"] == victim_id][1:], what="member_back")
        assert back[0]["message"] == f"node {leader}: member {victim_id} back"
    finally:
        for p in procs:
            p.terminate()


@pytest.mark.parametrize("log_format", ["json", "text"])
def test_the_line_a_node_stops_with_is_in_the_log_format(tmp_path: Path,
                                                         log_format: str) -> None:
    """With ``--log-format json`` stderr stays JSON lines to its end: a node stopped by an
    error says why as an ERROR object; in text, as ``error: ...``."""
    import subprocess
    import sys

    missing = tmp_path / "missing.toml"
    done = subprocess.run([sys.executable, "-m", "lazily_queue", "node", "--config",
                           str(missing), "--log-format", log_format],
                          capture_output=True, text=True, timeout=60)
    said = f"configuration file {missing} does not exist"
    assert done.returncode == 2 and done.stdout == ""
    if log_format == "text":
        assert done.stderr == f"error: {said}\n"
        return
    doc = json.loads(done.stderr)  # one object: nothing else on stderr
    assert (doc["level"], doc["logger"], doc["message"]) == ("ERROR", "lazily_queue.cli", said)
    assert (doc["event"], doc["code"]) == ("exit", 2)


def test_log_level_error_silences_transport_warnings(tmp_path: Path) -> None:
    peers = unix_peers(tmp_path, (1, 2))
    quiet = NodeProc(write_config(tmp_path / "q1.toml", 1, peers, data_dir="q1"),
                     args=("--log-level", "error"))
    wrong = NodeProc(write_config(tmp_path / "q2.toml", 2, peers, data_dir="q2"),
                     secret="not-the-secret")
    try:
        assert wrong.wait_exit() == 2  # refused by node 1: a warning node 1 would log
    finally:
        quiet.terminate()
        wrong.terminate()
    assert "WARNING" not in quiet.stderr() and "INFO" not in quiet.stderr()
    # The same refusal with the default level is logged.
    loud = NodeProc(write_config(tmp_path / "l1.toml", 1, peers, data_dir="l1"))
    wrong = NodeProc(write_config(tmp_path / "l2.toml", 2, peers, data_dir="l2"),
                     secret="not-the-secret")
    try:
        assert wrong.wait_exit() == 2
        wait_for(lambda: "cluster-secret challenge" in loud.stderr(), what="the refusal logged")
    finally:
        loud.terminate()
        wrong.terminate()
    assert "WARNING lazily_transports" in loud.stderr()


class _StubEngine(SimpleNamespace):
    @property
    def shape(self) -> tuple[object, ...]:
        return (self.leader_id, self.term, tuple(self.members), frozenset(self.connected))


class _Stub:
    """Just enough of a node for StateLog."""

    def __init__(self) -> None:
        self.node_id = "1"
        self.engine = _StubEngine(leader_id=None, term=1, members=["1", "2", "3"],
                                  connected=set())
        journal = SimpleNamespace(first_index=1)
        snapshots = SimpleNamespace(taken=0)
        replica = SimpleNamespace(engine=self.engine, journal=journal, snapshots=snapshots)
        self.driver = SimpleNamespace(replica=replica, disk_error=None)


def _stepper(caplog: pytest.LogCaptureFixture) -> Callable[..., list[logging.LogRecord]]:
    """A state log over a stub node: each call moves its clock on ``after`` seconds
    (default: past every link's start-up grace), applies its changes (engine attributes,
    ``disk_error``, ``taken``), observes, and returns the records it logged."""
    stub = _Stub()
    now = [0.0]
    state = StateLog(stub, clock=lambda: now[0])  # type: ignore[arg-type]
    caplog.set_level(logging.INFO, logger="lazily_queue.state")

    def step(after: float = SETTLING, **changes: Any) -> list[logging.LogRecord]:
        caplog.clear()
        now[0] += after
        for key, value in changes.items():
            if key == "disk_error":
                stub.driver.disk_error = value
            elif key == "taken":
                stub.driver.replica.snapshots.taken = value
                stub.driver.replica.journal.first_index = 500
            else:
                setattr(stub.engine, key, value)
        state.observe()
        return list(caplog.records)

    return step


def test_every_kind_of_state_change_is_one_line(caplog: pytest.LogCaptureFixture) -> None:
    records = _stepper(caplog)

    def step(**changes: Any) -> list[tuple[str, str]]:
        return [(r.__dict__["event"], r.getMessage()) for r in records(**changes)]

    assert step() == []
    assert step(connected={"2", "3"}) == [("member_back", "node 1: member 2 reachable"),
                                          ("member_back", "node 1: member 3 reachable")]
    assert step(leader_id="1") == [("leader_elected", "node 1: leader elected: this node "
                                                      "leads term 1")]
    assert step() == []  # nothing changed: nothing logged
    assert step(connected={"2"}) == [("member_lost", "node 1: member 3 lost: no link")]
    assert step(connected={"2", "3"}) == [("member_back", "node 1: member 3 back")]
    assert step(leader_id=None, term=2) == [
        ("leader_lost", "node 1: no leader (node 1 no longer leads; term 2)")]
    assert step(leader_id="2") == [("leader_elected", "node 1: leader elected: node 2 leads "
                                                      "term 2")]
    assert step(taken=1) == [("snapshot_taken", "node 1: snapshot taken; the log now starts "
                                                "at index 500")]
    assert step(members=["1", "2", "3", "4"]) == [("members_changed",
                                                  "node 1: members now 1, 2, 3, 4")]
    record = caplog.records[0]
    doc = json.loads(JsonFormatter().format(record))
    assert doc["event"] == "members_changed" and doc["members"] == ["1", "2", "3", "4"]
    assert doc["level"] == "INFO" and doc["ts"].endswith("+00:00")


def test_a_link_that_flaps_while_the_members_start_is_not_a_loss(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Two members dialling each other at start keep one of the two links: the other
    one's end is no lost member; a link that stays lost is still reported."""
    records = _stepper(caplog)

    def step(after: float, **changes: Any) -> list[str]:
        return [r.getMessage() for r in records(after, **changes)]

    assert step(0, connected={"2", "3"}) == ["node 1: member 2 reachable",
                                             "node 1: member 3 reachable"]
    assert step(0.05, connected={"2"}) == []  # the duplicate link to 3 closed
    assert step(0.05, connected={"2", "3"}) == []  # and 3 is linked again at once
    assert step(0.1, connected={"3"}) == []  # 2 drops while settling ...
    assert step(SETTLING / 2) == []
    assert step(SETTLING) == ["node 1: member 2 lost: no link"]  # ... and stays lost
    assert step(0.1) == []
    assert step(0.1, connected={"2", "3"}) == ["node 1: member 2 back"]
    assert step(SETTLING, connected={"2"}) == ["node 1: member 3 lost: no link"]  # settled


def test_a_leader_whose_link_ended_is_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    """The leader's process killed: its member_lost line warns with the cause; the
    leader_lost that follows is at INFO. A leader lost while still linked warns."""
    records = _stepper(caplog)

    def step(**changes: Any) -> list[tuple[str, str]]:
        return [(r.levelname, r.__dict__["event"]) for r in records(**changes)]

    step(connected={"2", "3"}, leader_id="2")
    assert step(connected={"3"}) == [("WARNING", "member_lost")]
    assert step(leader_id=None, term=2) == [("INFO", "leader_lost")]
    assert caplog.records[0].getMessage() == (
        "node 1: no leader (node 2 no longer leads: its link ended; term 2)")
    assert step(leader_id="3", term=3) == [("INFO", "leader_elected")]
    assert step(leader_id=None, term=4) == [("WARNING", "leader_lost")]  # 3 still linked
