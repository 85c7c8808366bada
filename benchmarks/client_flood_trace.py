"""Where the probe's commit latency goes under :mod:`benchmarks.client_flood`'s flood.

    python benchmarks/client_flood_trace.py [--flooders N] [--seconds S] [--keep DIR]
                                            [--rate N]

One lazily-queue round of the flood (``--clients-at members``; with ``--rate N`` the
flood offers N pushes/s in all, as ``client_flood.py --rate``) with its nodes traced
(:mod:`benchmarks.client_flood_hooks`) and the probe's pushes timed here on the same
clock. Each push is cut into stages: ``c>rx`` (the probe sends, the leader reads its
bytes off the socket), ``rx>read`` (the leader decodes its frame), ``read>append``
(proposed and in the leader's log), ``append>f_app`` (in the first follower to
acknowledge it's log), ``f_app>f_ack`` (its write and fsync), ``f_ack>ack`` (its
acknowledgement read by the leader), ``ack>apply0`` (committed and reached by the
apply), ``apply0>applied``, ``applied>answer`` (its result handed to its link),
``answer>write`` (the link writes it) and ``write>client`` (the probe has it); with the
flood ops not yet applied ahead of the probe's entry when it was appended. Then each
node's event loop (busy time of an iteration, the callbacks that took most) and its wait
for a CPU (schedstat, each of its threads'), the machine's steal time, and the probe
process's wait for a CPU.
"""

from __future__ import annotations

import argparse
import asyncio
import glob
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import client_flood  # noqa: E402
from benchmarks.client_flood_group import run_queue_wait  # noqa: E402
from benchmarks.flood_pacing import rate_argument  # noqa: E402

STAGES = ["c>rx", "rx>read", "read>append", "append>f_app", "f_app>f_ack", "f_ack>ack",
          "ack>apply0", "apply0>applied", "applied>answer", "answer>write", "write>client"]


def _percentiles(values: list[float]) -> str:
    ordered = sorted(values)
    n = len(ordered)
    if not n:
        return "-"
    return " ".join(f"{name} {ordered[min(n - 1, int(n * q))]:8.2f}"
                    for name, q in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99))) + \
        f"  mean {sum(ordered) / n:8.2f}"


def stages(samples: list[tuple[float, float]], leader: list[dict[str, Any]],
           followers: list[list[dict[str, Any]]]) -> list[dict[str, float]]:
    """Each probe push (``(sent, answered)``) cut into :data:`STAGES` (ms), with
    ``ahead_flood``; pushes some event of which is missing are left out."""
    by_idx = [{(e["e"], e["idx"]): e["t"] for e in f if "idx" in e} for f in followers]
    acks: dict[int, float] = {}
    for e in leader:
        if e["e"] == "ack":
            acks.setdefault(e["idx"], e["t"])
    rows = []
    k = 0
    for sent, answered in samples:
        while k < len(leader) and leader[k]["t"] < sent:
            k += 1
        seen: dict[str, dict[str, Any]] = {}
        for e in leader[k:]:
            if e["t"] > answered:
                break
            if e["e"] in ("rx", "read", "append", "apply0", "applied") and e["e"] not in seen:
                seen[e["e"]] = e
            elif e["e"] in ("answer", "write") and "applied" in seen and e["e"] not in seen:
                seen[e["e"]] = e
        if len(seen) < 7 or seen["append"]["idx"] not in acks:
            continue
        idx = seen["append"]["idx"]
        first = min(((f[("f_ack", idx)], f[("f_append", idx)]) for f in by_idx
                     if ("f_ack", idx) in f and ("f_append", idx) in f), default=None)
        if first is None:
            continue
        times = [sent, seen["rx"]["t"], seen["read"]["t"], seen["append"]["t"], first[1],
                 first[0], acks[idx], seen["apply0"]["t"], seen["applied"]["t"],
                 seen["answer"]["t"], seen["write"]["t"], answered]
        row = {stage: (times[i + 1] - times[i]) * 1000 for i, stage in enumerate(STAGES)}
        row["total"] = (answered - sent) * 1000
        row["ahead_flood"] = seen["append"]["ahead_flood"]
        rows.append(row)
    return rows


def _behind(values: list[float]) -> float:
    """How long something arriving at a random time waits for the iteration under way to
    end, on average: ``E[L**2] / (2 E[L])`` over iteration lengths ``L``."""
    total = sum(values)
    return sum(v * v for v in values) / (2 * total) if total else 0.0


def loop_under_flood(stats: list[dict[str, Any]], began: float, ended: float) -> str | None:
    """A node's loop iterations while the probe ran under the flood (the ``stats``
    windows that end inside it): busy time and the loop thread's CPU time per iteration
    (ms) and how long an arrival waits behind the iteration under way (mean, ms)."""
    rows = [row for e in stats if began + 2.0 <= e["t"] <= ended
            for row in e.get("iterations_ms", ())]
    if not rows:
        return None
    walls, cpus = [row[0] for row in rows], [row[1] for row in rows]
    return (f"under the flood, {len(rows)} loop iterations (ms): busy {_percentiles(walls)}, "
            f"behind {_behind(walls):.2f}; CPU {_percentiles(cpus)}, behind {_behind(cpus):.2f}")


def report(directory: Path, phases: dict[str, list[tuple[float, float]]],
           waits: dict[str, float | None]) -> None:
    traces = {}
    for path in glob.glob(str(directory / "trace-*.jsonl")):
        with open(path) as lines:
            traces[path] = [json.loads(line) for line in lines if line.strip()]
    leader = max(traces, key=lambda p: sum(e["e"] == "append" for e in traces[p]))
    followers = [events for path, events in traces.items() if path != leader]
    for name, samples in phases.items():
        rows = stages(samples, traces[leader], followers)
        print(f"probe {name}: {len(rows)} of {len(samples)} pushes traced (ms); its process "
              f"waited {waits.get(name)} ms for a CPU per time slice")
        for key in ["total", *STAGES, "ahead_flood"]:
            print(f"  {key:15s} {_percentiles([row[key] for row in rows])}")
    for path, events in traces.items():
        stats = [e for e in events if e["e"] == "stats"]
        if len(stats) < 2:
            continue
        first, last = stats[0], stats[-1]
        cpu, wait, slices = (int(b) - int(a) for a, b in zip(first["sched"][:3],
                                                            last["sched"][:3], strict=True))
        role = "leader" if path == leader else "follower"
        print(f"{role} {Path(path).stem}: loop iteration busy p50/p90/p99 {last['busy_ms']} ms; "
              f"CPU {cpu / 1e9:.2f} s, waited for a CPU {wait / 1e9:.2f} s "
              f"({wait / 1e6 / max(slices, 1):.2f} ms per time slice) over "
              f"{last['t'] - first['t']:.1f} s")
        if last.get("answers"):
            print("    answers sent: " + ", ".join(f"{who} {how} {count:,}"
                                                   for who, how, count in last["answers"]))
        waits = [e for e in events if e["e"] == "hand_wait"]
        if waits:
            print(f"    the probe's frame waited for room among its client's frames in hand "
                  f"{len(waits)} times")
        for tid, after in last.get("threads", {}).items():
            before = first.get("threads", {}).get(tid, ["0", "0", "0"])
            ran, queued = (int(b) - int(a) for a, b in zip(before[:2], after[:2], strict=True))
            if ran > 10**7:
                print(f"    thread {tid}{' (loop)' if tid == Path(path).stem[6:] else ''}: "
                      f"CPU {ran / 1e9:.2f} s, waited for a CPU {queued / 1e9:.2f} s")
        if "steal" in first:
            print(f"    machine's steal time {(int(last['steal']) - int(first['steal'])) / 100:.2f}"
                  f" CPU s")
        flood = phases.get("under the flood")
        line = loop_under_flood(stats, flood[0][0], flood[-1][1]) if flood else None
        if line is not None:
            print(f"    {line}")
        for name, count, cpu, most, over in last.get("sections", ()):
            print(f"    {name:50s} {count:7d} calls, CPU {cpu:.3f} s, most {most} ms, "
                  f"{over} over 2 ms")
        for name, count, total, most, *cpu in last["callbacks"][:8]:
            print(f"    {name[:50]:50s} {count:7d} calls {total:7.3f} s, longest {most} ms"
                  + (f"; CPU {cpu[0]:.3f} s, most {cpu[1]} ms" if cpu else ""))


Phases = dict[str, list[tuple[float, float]]]


async def _run(flooders: int, seconds: float,
               rate: float | None = None) -> tuple[Phases, dict[str, float | None]]:
    phases: Phases = {}
    waits: dict[str, float | None] = {}

    async def probe(client: Any, length: float) -> list[float]:
        name = "alone" if not phases else "under the flood"
        q, timed = client.queue("probe"), phases.setdefault(name, [])
        before, until = run_queue_wait(), time.monotonic() + length
        while time.monotonic() < until:
            sent = time.monotonic()
            await q.push(client_flood.PAYLOAD)
            timed.append((sent, time.monotonic()))
        after = run_queue_wait()
        waits[name] = None if before is None or after is None else round(
            (after[0] - before[0]) / max(1, after[1] - before[1]) * 1000, 2)
        return [answered - sent for sent, answered in timed]

    client_flood._probe = probe  # type: ignore[assignment]
    out = await client_flood.run(flooders, seconds, rate=rate)
    print(f"flood: {out['flood_pushes_per_s']:,} pushes/s; probe p50 alone "
          f"{out['baseline_p50_ms']} ms, under the flood {out['flood_p50_ms']} ms")
    return phases, waits


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--flooders", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--keep", type=Path, help="keep the traces in this directory")
    parser.add_argument("--rate", type=rate_argument, default=None, metavar="N",
                        help="the flood offers N pushes/s in all (client_flood.py --rate)")
    args = parser.parse_args()
    directory = args.keep or Path(tempfile.mkdtemp(prefix="lazily-flood-trace-"))
    directory.mkdir(parents=True, exist_ok=True)
    os.environ["LAZILY_FLOOD_TRACE"] = str(directory)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "benchmarks" / "flood_trace"), str(ROOT), os.environ.get("PYTHONPATH", "")])
    phases, waits = asyncio.run(_run(args.flooders, args.seconds, args.rate))
    report(directory, phases, waits)
    return 0


if __name__ == "__main__":
    sys.exit(main())
