"""``benchmarks/client_flood.py`` floods lazily-queue, then NATS JetStream R3, in one run:
each system's probe has samples alone and under the flood, the flood commits, the
lazily-queue cluster keeps its leader, a table row per system and one JSON line end it;
NATS missing is one line with an install hint (a small run: the figures' shape and
realness, never their values)."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "client_flood.py"
sys.path.insert(0, str(ROOT))

import benchmarks.client_flood as client_flood  # noqa: E402
import benchmarks.client_flood_trace as client_flood_trace  # noqa: E402
from benchmarks.client_flood import over_rounds, table  # noqa: E402
from benchmarks.client_flood_group import (  # noqa: E402
    MARK_READY,
    FloodFailed,
    cpu_and_wait,
    flood_outputs,
    flood_ready,
    release_flood,
    run_queue_wait,
    start_flood,
    stop_flood,
    wait_per_run,
    wait_per_wake,
)

SMALL = ["--flooders", "1", "--seconds", "3", "--json"]
HAS_NATS = shutil.which("nats-server") is not None and importlib.util.find_spec("nats") is not None


def _run(args: list[str], env: dict[str, str] | None = None) -> tuple[list[str], dict[str, Any]]:
    done = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True,
                          text=True, timeout=280, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()
    return lines, json.loads(lines[-1])


def _assert_flooded(figures: dict[str, Any]) -> None:
    assert figures["baseline_samples"] > 0 and figures["flood_samples"] > 0
    assert 0 < figures["baseline_p50_ms"] <= figures["baseline_p99_ms"]
    assert 0 < figures["flood_p50_ms"] <= figures["flood_p99_ms"]
    assert figures["flood_p50_ratio"] == pytest.approx(
        figures["flood_p50_ms"] / figures["baseline_p50_ms"], abs=0.06)
    assert figures["flood_pushes_per_s"] > 0
    # CPU read from the processes over the flood: some, and no more than the machine has
    cores = os.cpu_count() or 1
    assert 0 < figures["flood_cluster_cores"] <= cores
    assert 0 < figures["flood_clients_cores"] <= cores
    assert figures["flood_cluster_us_per_op"] > 0


def _row(lines: list[str], title: str) -> list[str]:
    row = next(line for line in lines if line.startswith(f"| {title} "))
    return [cell.strip() for cell in row.strip("|").split("|")]


@pytest.mark.slow
def test_both_systems_are_probed_alone_and_under_the_flood() -> None:
    lines, out = _run(SMALL)
    assert out["flooders"] == 1 and out["seconds"] == 3.0
    ours = out["systems"]["lazily"]
    _assert_flooded(ours)
    assert ours["leader_kept"] is True and ours["leader_before"] == ours["leader_after"]
    assert ours["members_durability"] == ["fsync"]  # the default, read from their status
    assert ours["leaders_seen"] == ["{}@{}".format(*ours["leader_before"])]
    assert 0 < ours["max_member_in_flight"]
    assert out["clients_at"] == "members"  # the default: flooders start at members in turn
    assert out["rate"] is None  # the default: closed loop, nothing behind a schedule
    assert ours["flood_rate"] is None and ours["flood_behind"] == ours["flood_behind_late"] == 0
    # 4 flooding clients start at a member, the greedy one at the next, and stay there
    at = ours["flood_clients_at"]
    assert sum(at.values()) == 5 and len(at) >= 2, at
    assert _row(lines, "lazily-queue")[4] == f"{ours['flood_pushes_per_s']:,}"
    assert _row(lines, "lazily-queue")[6] == (
        f"{ours['flood_cluster_cores']:.2f}, {ours['flood_cluster_us_per_op']:.0f}")
    assert any(line.startswith("CPU while flooding") and "the members" in line
               for line in lines)
    if not HAS_NATS:
        assert out["skipped"]["nats"].startswith(("nats-server not found", "Python client"))
        assert "nats" not in out["systems"]
        return
    theirs = out["systems"]["nats"]
    assert "error" not in theirs, theirs
    _assert_flooded(theirs)
    assert set(theirs["leader_before"]) == {"PROBE", "FLOOD"}
    assert theirs["leader_kept"] == (theirs["leader_before"] == theirs["leader_after"])
    assert _row(lines, "NATS JetStream R3")[4] == f"{theirs['flood_pushes_per_s']:,}"
    assert theirs["flood_rate"] is None and theirs["flood_behind"] == 0
    shared = theirs["shared"]
    assert shared["flood_samples"] > 0 and 0 < shared["flood_p50_ms"] <= shared["flood_p99_ms"]
    assert _row(lines, "NATS R3, probe on the flood's stream")[2] == (
        f"{shared['flood_p50_ms']:.2f} ({shared['flood_p50_ratio']}x)")
    assert out["skipped"] == {}


@pytest.mark.slow
def test_at_a_rate_both_floods_offer_it_and_report_it_with_the_pushes_behind() -> None:
    """``--rate 300``: 60 pushes/s for each of 5 clients, open loop; each system commits
    no more than was offered (the flood never turned closed-loop), and the JSON, the
    lines and the table carry the offered rate and the pushes behind schedule."""
    lines, out = _run([*SMALL, "--rate", "300"])
    assert out["rate"] == 300.0
    pushed = {"lazily": "committed pushes/s", "nats": "acknowledged publishes/s"}
    assert any(line.startswith("1 flooder processes x 4 clients, plus one client, offering "
                               "300 pushes/s in all for 3 s (open loop: 60.0/s each")
               for line in lines)
    for key, title in (("lazily", "lazily-queue"), ("nats", "NATS JetStream R3")):
        if key == "nats" and not HAS_NATS:
            continue
        figures = out["systems"][key]
        assert "error" not in figures, figures
        _assert_flooded(figures)
        behind, late = figures["flood_behind"], figures["flood_behind_late"]
        assert figures["flood_rate"] == 300.0 and 0 <= late <= behind
        # every client's schedule spans the 3 s from the flood on: 180 pushes due each,
        # 900 in all, every one committed (or failed, NATS), or behind: counted, and
        # never more (round() of the rate per second: within 1.5)
        done = figures["flood_pushes_per_s"] * 3 + figures.get("flood_failed", 0) + behind
        assert abs(done - 900) <= 1.5, figures
        assert _row(lines, title)[4:7] == [f"{figures['flood_pushes_per_s']:,}", "300", (
            f"{behind:,}" + (f" ({late:,} late)" if late else ""))]
        assert (f"flood: {figures['flood_pushes_per_s']:,} {pushed[key]} of 300 offered "
                f"({behind:,} pushes behind schedule, never sent; {late:,} of them as the "
                "flooder's own process was late)") in "\n".join(lines)


@pytest.mark.parametrize("rate", ["0", "-5", "nan"])
def test_a_bad_rate_is_refused_in_one_line(rate: str) -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--rate", rate],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1].endswith(
        f"error: argument --rate: pushes per second, a finite number over 0, not '{rate}'")


@pytest.mark.slow
def test_a_missing_nats_server_is_one_line_and_durability_none_runs_members_without_fsync(
        tmp_path: Path) -> None:
    """No ``nats-server`` on the PATH: one line with an install hint; ``--durability
    none``: the members run as their status says, under a row of their own."""
    env = dict(os.environ, PATH=str(tmp_path))  # no nats-server
    lines, out = _run([*SMALL, "--durability", "none"], env=env)
    assert out["skipped"] == {"nats": "nats-server not found: apt install nats-server"}
    assert "NATS JetStream R3: skipped (nats-server not found: apt install nats-server)" in lines
    assert set(out["systems"]) == {"lazily_none"}
    ours = out["systems"]["lazily_none"]
    _assert_flooded(ours)
    assert ours["members_durability"] == ["none"]
    assert _row(lines, "lazily-queue, durability none")[4] == f"{ours['flood_pushes_per_s']:,}"
    assert any(line.startswith("lazily-queue, durability none: each member writes its log "
                               "and acknowledges before any fsync") for line in lines)
    assert not any(line.startswith(("| NATS", "| lazily-queue |")) for line in lines)


@pytest.fixture(scope="module")
def leader_rounds() -> tuple[list[str], dict[str, Any]]:
    """One run of lazily-queue alone, its flooders at the leader, over two rounds (the
    tests of ``--peers none``, ``--clients-at leader`` and ``--rounds`` share it)."""
    return _run([*SMALL, "--peers", "none", "--clients-at", "leader", "--rounds", "2"])


@pytest.mark.slow
@pytest.mark.xdist_group("client-flood-leader-rounds")
def test_peers_none_runs_lazily_queue_alone_and_clients_at_leader_floods_the_leader(
        leader_rounds: tuple[list[str], dict[str, Any]]) -> None:
    lines, out = leader_rounds
    assert set(out["systems"]) == {"lazily"} and out["skipped"] == {}
    assert not any("NATS" in line for line in lines)
    assert out["clients_at"] == "leader"
    for run in out["each_round"]:
        ours = run["lazily"]
        at = ours["flood_clients_at"]
        assert sum(at.values()) == 5 and at.get(str(ours["leader_before"][0]), 0) >= 4, at


def test_the_table_has_a_row_per_system_that_ran() -> None:
    figures = {"baseline_p50_ms": 1.25, "flood_p50_ms": 15.0, "flood_p50_ratio": 12.0,
               "flood_p99_ms": 70.25, "flood_pushes_per_s": 40_000, "leader_kept": True,
               "flood_cluster_cores": 1.375, "flood_cluster_us_per_op": 34.4}
    text = table({"lazily": figures, "nats": {"error": "RuntimeError: boom"}})
    lines = text.splitlines()
    assert len(lines) == 3 and {line.count("|") for line in lines} == {8}
    assert _row(lines, "lazily-queue") == ["lazily-queue", "1.25", "15.00 (12.0x)", "70.2",
                                           "40,000", "yes", "1.38, 34"]
    both = table({"lazily": figures, "nats": dict(figures, leader_kept=False)}).splitlines()
    assert _row(both, "NATS JetStream R3")[5] == "no" and len(both) == 4
    shared = {"flood_p50_ms": 9.5, "flood_p99_ms": 30.0, "flood_samples": 10,
              "flood_p50_ratio": 7.6}
    three = table({"lazily": figures, "nats": dict(figures, shared=shared)}).splitlines()
    assert len(three) == 5
    assert _row(three, "NATS R3, probe on the flood's stream")[1:4] == [
        "1.25", "9.50 (7.6x)", "30.0"]
    paced = dict(figures, flood_rate=4000.0, flood_behind=1234, flood_behind_late=0)
    rows = table({"lazily": paced, "nats": dict(paced, flood_behind_late=1000,
                                                shared=shared)}).splitlines()
    assert [cell.strip() for cell in rows[0].split("|")[5:8]] == [
        "flood acked/s", "offered/s", "behind"]
    assert _row(rows, "lazily-queue")[4:8] == ["40,000", "4,000", "1,234", "yes"]
    assert _row(rows, "NATS R3, probe on the flood's stream")[5:7] == [
        "4,000", "1,234 (1,000 late)"]


def test_rounds_report_each_figures_median_and_leaders_kept_only_if_kept_in_all() -> None:
    def figures(p50: float, pushes: int, kept: bool = True) -> dict[str, Any]:
        return {"baseline_p50_ms": 1.0, "baseline_p99_ms": 2.0, "flood_p50_ms": p50,
                "flood_p99_ms": p50 * 10, "flood_p50_ratio": p50, "flood_samples": 5,
                "flood_pushes_per_s": pushes, "leader_kept": kept}

    shared = [{"flood_p50_ms": v, "flood_p99_ms": v * 2, "flood_samples": 3,
               "flood_p50_ratio": v} for v in (3.0, 1.0, 2.0)]
    rounds = [{"lazily": figures(9.0, 100), "nats": dict(figures(1.0, 10), shared=shared[0])},
              {"lazily": figures(30.0, 300, kept=False),
               "nats": dict(figures(2.0, 20), shared=shared[1])},
              {"lazily": figures(8.0, 200), "nats": {"error": "RuntimeError: boom"}}]
    out = over_rounds(rounds)
    ours, theirs = out["lazily"], out["nats"]
    assert ours["flood_p50_ms"] == 9.0 and ours["flood_p99_ms"] == 90.0
    assert ours["flood_pushes_per_s"] == 200 and ours["flood_p50_rounds"] == [9.0, 30.0, 8.0]
    assert ours["leader_kept"] is False and ours["rounds"] == 3
    assert theirs["rounds"] == 2 and theirs["flood_p50_ms"] == 1.5  # the failed round left out
    assert theirs["flood_pushes_per_s"] == 15 and theirs["leader_kept"] is True
    assert theirs["shared"]["flood_p50_ms"] == 2.0 and theirs["shared"]["flood_p99_ms"] == 4.0
    failed = over_rounds([{"nats": {"error": "RuntimeError: boom"}}])
    assert failed == {"nats": {"error": "RuntimeError: boom"}}
    assert _row(table(out).splitlines(), "lazily-queue")[2] == "9.00 (9.0x)"


@pytest.mark.slow
@pytest.mark.xdist_group("client-flood-leader-rounds")
def test_several_rounds_end_with_the_medians_and_each_rounds_p50(
        leader_rounds: tuple[list[str], dict[str, Any]]) -> None:
    lines, out = leader_rounds
    assert out["rounds"] == 2 and len(out["each_round"]) == 2
    assert sum(line.startswith("-- round ") for line in lines) == 2
    each = [run["lazily"]["flood_p50_ms"] for run in out["each_round"]]
    ours = out["systems"]["lazily"]
    _assert_flooded(dict(ours, flood_p50_ratio=ours["flood_p50_ms"] / ours["baseline_p50_ms"]))
    assert ours["flood_p50_rounds"] == each
    assert ours["flood_p50_ms"] == pytest.approx(sum(each) / 2, abs=0.001)
    summary = next(line for line in lines if line.startswith("medians of 2 rounds"))
    assert summary.endswith(f"lazily-queue {each[0]:.2f}, {each[1]:.2f}")


def test_an_unknown_peer_is_refused_in_one_line() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--peers", "kafka"],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 2
    assert "invalid choice: 'kafka'" in done.stderr and "Traceback" not in done.stderr


async def test_a_round_that_cannot_finish_says_where_it_stopped(monkeypatch: Any) -> None:
    monkeypatch.setattr(client_flood, "ROUND_LIMIT", 1.5 - 4 * 3)  # 1.5 s for a 3 s flood
    started = time.monotonic()
    with pytest.raises(client_flood.RoundFailed, match=(
            r"^lazily-queue's round timed out while \w[\w ]+ \(not done within 1.5 s\); "
            r"the nodes' last log lines: node 1: .*; node 2: .*; node 3: ")):
        await client_flood.run(1, 3.0)
    assert time.monotonic() - started < 30  # the nodes stopped, nothing waited for


async def test_flooders_that_fail_to_start_end_the_round_saying_how_many_were_ready(
        monkeypatch: Any) -> None:
    monkeypatch.setattr(client_flood, "FLOODER", "raise SystemExit(3)")
    with pytest.raises(client_flood.RoundFailed, match=(
            r"^lazily-queue's round failed while waiting for every flooder to link its "
            r"clients: 0 of 2 flooder processes became ready before the flood ended "
            r"\(flooder process 0 exited with status 3\)$")):
        await client_flood.run(1, 3.0)


async def test_the_flooders_run_in_a_session_apart_from_the_probe_and_report_in_order(
) -> None:
    """Every flooder runs in one new session, not this process's (so the probe here does
    not share their share of the CPU), and what each printed comes back in start order."""
    report = "import os, sys; print(os.getsid(0), sys.argv[1])"
    flood = await start_flood([[sys.executable, "-c", report, str(k)] for k in range(3)])
    outputs = await flood_outputs(flood)
    sessions = {int(text.split()[0]) for text in outputs}
    assert [text.split()[1] for text in outputs] == ["0", "1", "2"]
    assert sessions == {flood.pid} and os.getsid(0) not in sessions


async def test_a_flooder_that_fails_fails_the_flood_saying_which() -> None:
    ok, bad = [sys.executable, "-c", "print(1)"], [sys.executable, "-c", "raise SystemExit(3)"]
    flood = await start_flood([ok, bad])
    with pytest.raises(FloodFailed, match=r"^flooder process 1 exited with status 3$"):
        await flood_outputs(flood)
    await stop_flood(flood)  # ended already: nothing to do


def _flooder(code: str) -> list[str]:
    """A flooder process that runs ``code`` after :data:`MARK_READY`."""
    return [sys.executable, "-c", MARK_READY + code]


async def test_the_flood_is_ready_once_every_flooder_has_linked_all_its_clients(
        tmp_path: Path) -> None:
    """A flooder is ready at its last client, however long it takes to get there."""
    slow = _flooder("import time; time.sleep(1); linked(2); linked(2); time.sleep(60)")
    quick = _flooder("import time; linked(1); time.sleep(60)")
    flood = await start_flood([slow, quick], ready=tmp_path / "ready")
    try:
        await flood_ready(flood, tmp_path / "ready", 2)
        assert len(list((tmp_path / "ready").iterdir())) == 2
    finally:
        await stop_flood(flood)


async def test_a_flooder_awaiting_the_flood_starts_only_once_it_is_released(
        tmp_path: Path) -> None:
    """``flood_on()`` returns once :func:`release_flood` is called (here after a file the
    flooders look for was made), at once for a flooder started without a ready directory."""
    made = tmp_path / "made-before-release"
    code = ("import asyncio, os, sys; linked(1); asyncio.run(flood_on()); "
            f"print(os.path.exists({str(made)!r}))")
    flood = await start_flood([_flooder(code)] * 2, ready=tmp_path / "ready")
    try:
        await flood_ready(flood, tmp_path / "ready", 2)
        made.touch()
        release_flood(tmp_path / "ready")
        assert [text.strip() for text in await flood_outputs(flood)] == ["True", "True"]
    finally:
        await stop_flood(flood)
    made.unlink()
    alone = await start_flood([_flooder(code)])
    assert [text.strip() for text in await flood_outputs(alone)] == ["False"]


async def test_a_flooder_that_never_gets_ready_ends_the_wait_saying_how_many_did(
        tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    linked_all = _flooder("import time; linked(1); time.sleep(60)")
    linked_half = _flooder("import time; linked(2); time.sleep(60)")  # 1 client of 2
    flood = await start_flood([linked_all, linked_half], ready=ready)
    try:
        while not any(ready.iterdir()):  # noqa: ASYNC110 - the first one's mark
            await asyncio.sleep(0.05)
        with pytest.raises(FloodFailed, match=(
                r"^1 of 2 flooder processes became ready within 0.5 s \(one that failed "
                r"to start printed why\)$")):
            await flood_ready(flood, ready, 2, limit=0.5)
    finally:
        await stop_flood(flood)


async def test_a_flood_that_ends_before_it_is_ready_says_which_flooder_failed(
        tmp_path: Path) -> None:
    failed = _flooder("raise SystemExit(3)")
    flood = await start_flood([_flooder("linked(1)"), failed], ready=tmp_path / "ready")
    try:
        with pytest.raises(FloodFailed, match=(
                r"^1 of 2 flooder processes became ready before the flood ended \(flooder "
                r"process 1 exited with status 3\)$")):
            await flood_ready(flood, tmp_path / "ready", 2, limit=120)
    finally:
        await stop_flood(flood)


@pytest.mark.slow
@pytest.mark.skipif(not HAS_NATS, reason="needs nats-server and nats-py")
async def test_the_nats_probe_starts_once_every_flooder_is_ready(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Flooders that take 3 s to start (longer than the 1 s the probe waits after they
    are ready): the probe under the flood, on either stream, starts with both ready."""
    from benchmarks import client_flood_nats

    root = tmp_path / "nats"
    monkeypatch.setattr(client_flood_nats, "FLOODER",
                        "import time; time.sleep(3)\n" + client_flood_nats.FLOODER)
    probe = client_flood_nats._probe
    ready_at_probe: list[int | None] = []

    async def counting(js: Any, seconds: float, subject: str = "PROBE") -> list[float]:
        where = root / "flood-ready"
        ready_at_probe.append(len(list(where.iterdir())) if where.exists() else None)
        return await probe(js, seconds, subject)

    monkeypatch.setattr(client_flood_nats, "_probe", counting)
    out = await client_flood_nats.run(root, 1, 3.0, clients=2, in_flight=8, greedy=16)
    assert ready_at_probe == [None, 2, 2]  # alone, under the flood, on the flood's stream
    assert out["flood_samples"] > 0 and out["flood_pushes_per_s"] > 0


def test_the_probes_wait_for_a_cpu_is_per_time_slice() -> None:
    assert wait_per_wake((1.0, 100), (1.5, 350)) == 2.0
    assert wait_per_wake(None, (1.5, 350)) is None and wait_per_wake((1.0, 5), (1.0, 5)) is None
    now = run_queue_wait()
    assert now is None or (now[0] >= 0 and now[1] >= 0)


def test_the_members_wait_for_a_cpu_is_per_second_they_ran() -> None:
    assert wait_per_run((2.0, 1.0), (2.5, 2.5)) == 3.0
    assert wait_per_run(None, (2.5, 2.5)) is None and wait_per_run((2.0, 1.0), (2.0, 1.0)) is None
    now = cpu_and_wait([os.getpid()])
    assert now is None or (now[0] > 0 and now[1] >= 0)
    assert cpu_and_wait([None]) is None


def test_a_traced_loop_under_the_flood_counts_the_windows_inside_it() -> None:
    stats = [{"e": "stats", "t": 1.0, "iterations_ms": [[100.0, 100.0]]},  # before it
             {"e": "stats", "t": 4.0, "iterations_ms": [[1.0, 0.5], [3.0, 1.5]]},
             {"e": "stats", "t": 9.0, "iterations_ms": [[50.0, 50.0]]}]  # after it
    line = client_flood_trace.loop_under_flood(stats, 1.5, 5.0)
    assert line is not None and line.startswith("under the flood, 2 loop iterations")
    # behind, sum(L**2) / (2 sum(L)): (1 + 9) / (2 * 4) busy, (0.25 + 2.25) / (2 * 2) CPU
    assert "behind 1.25;" in line and line.endswith("behind 0.62")
    assert client_flood_trace.loop_under_flood(stats, 20.0, 30.0) is None


def test_a_traced_push_is_cut_into_stages_by_the_first_follower_to_acknowledge() -> None:
    def e(kind: str, t: float, **fields: Any) -> dict[str, Any]:
        return {"e": kind, "t": t, **fields}

    leader = [e("rx", 1.0005), e("read", 1.001), e("append", 1.002, idx=7, ahead_flood=256),
              e("ack", 1.010, idx=7, peer="3"), e("ack", 1.012, idx=7, peer="2"),
              e("apply0", 1.011), e("applied", 1.0115), e("answer", 1.0118),
              e("write", 1.012),
              e("rx", 2.0005), e("read", 2.001)]  # the next push: never appended
    followers = [[e("f_append", 1.004, idx=7), e("f_ack", 1.011, idx=7)],
                 [e("f_append", 1.005, idx=7), e("f_ack", 1.009, idx=7)]]
    rows = client_flood_trace.stages([(1.0, 1.013), (2.0, 2.010)], leader, followers)
    assert len(rows) == 1  # the second push has no append: left out
    row = rows[0]
    assert row["ahead_flood"] == 256
    expected = {"total": 13, "c>rx": 0.5, "rx>read": 0.5, "read>append": 1,
                "append>f_app": 3, "f_app>f_ack": 4, "f_ack>ack": 1, "ack>apply0": 1,
                "apply0>applied": 0.5, "applied>answer": 0.3, "answer>write": 0.2,
                "write>client": 1}
    assert {key: round(row[key], 3) for key in expected} == expected


async def test_a_traced_task_step_is_named_by_its_coroutine() -> None:
    from benchmarks.client_flood_hooks import _callback_name

    async def sample_work() -> None:
        await asyncio.sleep(0)

    loop = asyncio.get_running_loop()
    task = loop.create_task(sample_work())
    steps = [h._callback for h in loop._ready  # type: ignore[attr-defined]
             if getattr(h._callback, "__self__", None) is task]
    assert [_callback_name(step) for step in steps] == [
        "TaskStepMethWrapper (test_a_traced_task_step_is_named_by_its_coroutine.<locals>."
        "sample_work)"]
    await task
    assert _callback_name(table) == "table"
