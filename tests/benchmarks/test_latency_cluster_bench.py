"""The 3-member latency breakdown: its stage attribution and one short real run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "latency_cluster.py"
sys.path.insert(0, str(SCRIPT.parents[1]))

from benchmarks.latency_cluster import STAGES, _first, analyse, trace  # noqa: E402


def _timelines() -> dict[str, list[tuple[int, str, str]]]:
    """One push (microseconds, as nanoseconds): node 2 answers first, node 3 later."""
    us = 1000
    leader = [(0, "push", ""), (10 * us, "step", ""), (30 * us, "send", "2"),
              (31 * us, "send", "3"), (40 * us, "fsync", ""), (140 * us, "fsync_end", ""),
              (150 * us, "step_end", ""), (400 * us, "in", "2"), (410 * us, "step", ""),
              (450 * us, "completion", ""), (460 * us, "step_end", ""),
              (470 * us, "in", "3"), (500 * us, "push_end", "")]
    fast = [(60 * us, "in", "1"), (80 * us, "step", ""), (100 * us, "fsync", ""),
            (300 * us, "fsync_end", ""), (320 * us, "send", "1")]
    slow = [(90 * us, "in", "1"), (120 * us, "fsync", ""), (420 * us, "fsync_end", ""),
            (440 * us, "send", "1")]
    return {"1": leader, "2": fast, "3": slow}


def test_each_stage_follows_the_reply_that_arrived_first() -> None:
    figures = analyse("1", _timelines())
    assert figures["pushes"] == 1 and figures["traced"] == 1 and figures["p50_us"] == 500
    expected = {"to_step": 10, "to_send": 20, "link_out": 30, "f_to_fsync": 40,
                "f_fsync": 200, "f_to_reply": 20, "link_back": 80, "to_completion": 50,
                "to_resume": 50}
    assert {name: figures[f"{name}_us"] for name in STAGES} == expected
    assert sum(expected.values()) == 500  # the stages add up to the push
    assert figures["l_fsync_us"] == 100 and figures["leader_fsync_last"] == 0
    assert figures["completed_in_reply_step"] == 1


def test_every_push_of_a_long_run_is_followed_as_one_alone() -> None:
    one = _timelines()
    period = 1000 * 1000  # a push every millisecond, 2,000 of them
    many = {node: [(t + i * period, k, p) for i in range(2000) for t, k, p in events]
            for node, events in one.items()}
    figures, alone = analyse("1", many), analyse("1", one)
    assert figures["pushes"] == figures["traced"] == 2000
    assert {k: v for k, v in figures.items() if k not in ("pushes", "traced")} == {
        k: v * (2000 if k in ("leader_fsync_last", "completed_in_reply_step") else 1)
        for k, v in alone.items() if k not in ("pushes", "traced")}


def test_an_event_is_found_at_or_after_a_time_and_not_after_a_bound() -> None:
    events = [(5, "a", ""), (5, "b", "2"), (7, "b", "3"), (9, "c", "")]
    assert _first(events, 5, "a") == 5 and _first(events, 5, "b") == 5
    assert _first(events, 6, "b") == 7 and _first(events, 5, "b", "3") == 7
    assert _first(events, 5, "c", before=8) is None and _first(events, 5, "c", before=9) == 9
    assert _first(events, 10, "a") is None and _first([], 0, "a") is None


def test_the_trace_merges_every_node_in_time_order() -> None:
    lines = trace("1", _timelines(), 0)
    assert lines[0].split() == ["0.0", "node", "1", "push"]
    assert lines[-1].split() == ["500.0", "node", "1", "push_end"]
    times = [float(line.split()[0]) for line in lines]
    assert times == sorted(times) and len(lines) == 22


def test_a_short_run_ends_with_one_json_line_of_every_stage() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--samples", "30", "--json"],
                          capture_output=True, text=True, timeout=300, check=True)
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["pushes"] == 30 and figures["p50_us"] > 0
    assert figures["traced"] == figures["pushes"]  # every push followed end to end
    assert all(figures[f"{name}_us"] is not None for name in STAGES)


def test_bad_arguments_get_a_one_line_error() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--samples", "0"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--samples must be at least 1" in done.stderr
