"""Where one push's time goes in a 3-member cluster, stage by stage, across processes.

    python benchmarks/latency_cluster.py [--samples N] [--trace K] [--json]

Three ``lazily-queue node`` processes over Unix sockets, ``durability = "fsync"``, the
workload (100-byte pushes, one in flight) in an ``[app]`` of the leader, like the
3-member latency row of ``benchmarks/peers.py``. Every node wraps its driver's steps,
fsyncs, frames in and frames out for the run (nothing in the library is instrumented)
and records when each happened on the system-wide monotonic clock, so one push can be
followed from the leader to its followers and back. Each stage's p50 is printed in
microseconds, along the push's critical path (the follower whose reply arrived first):

- ``to_step``: the caller's ``push`` began -> the leader's step began;
- ``to_send``: leader step began -> its AppendEntries were handed to the links;
- ``link_out``: leader sent -> the follower's driver received the frame;
- ``f_to_fsync``: follower received -> its fsync began (decode, append, journal write);
- ``f_fsync``: the follower's fsync;
- ``f_to_reply``: follower fsync ended -> its reply was handed to its link;
- ``link_back``: follower replied -> the leader's driver received the reply;
- ``to_completion``: leader received the reply -> the push's result handed over
  (commit, apply);
- ``to_resume``: completion -> the caller resumed.

Also printed: the leader's own fsync (``l_fsync``) and how often it ended only after
the first reply was sent (the reply then waits for the leader's own copy: its fsync is
on the critical path), and how often the result was handed over in the step that the
reply started. With ``--json`` the last line is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import contextlib
import itertools
import json
import os
import secrets
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.peers_common import PAYLOAD, node_env, reap, start_nodes  # noqa: E402
from benchmarks.peers_lazily import SECRET_ENV, _config  # noqa: E402

STAGES = ["to_step", "to_send", "link_out", "f_to_fsync", "f_fsync", "f_to_reply",
          "link_back", "to_completion", "to_resume"]

Event = tuple[int, str, str]


def instrument(node: Any) -> list[Event]:
    """Record when this node's steps, step halves, journal writes, fsyncs, completions,
    messages delivered, frames in and frames out begin (and most of them end)."""
    events: list[Event] = []
    now = time.perf_counter_ns
    driver, network, replica = node.driver, node.driver.network, node.driver.replica

    def marked(name: str, call: Any) -> Any:
        def run(*args: Any) -> Any:
            events.append((now(), name, ""))
            try:
                return call(*args)
            finally:
                events.append((now(), name + "_end", ""))
        return run

    results, on_frame, send = driver._dispatch_results, network._on_frame, network.send

    def timed_results(ready: Any) -> None:
        if ready.completions:
            events.append((now(), "completion", ""))
        results(ready)

    def timed_frame(peer: str, frame: bytes) -> None:
        events.append((now(), "in", peer))
        on_frame(peer, frame)

    def timed_send(peer: str, frame: bytes) -> None:
        events.append((now(), "send", peer))
        send(peer, frame)

    replica.receive = marked("deliver", replica.receive)
    replica.journal.write = marked("write", replica.journal.write)
    replica.prepare = marked("prepare", replica.prepare)
    replica.tick = marked("tick", replica.tick)
    driver._step = marked("step", driver._step)
    driver._dispatch_results = timed_results
    driver.fsync._fsync = marked("fsync", driver.fsync._fsync)
    driver.fsync._fsync_here = marked("fsync", driver.fsync._fsync_here)
    network._on_frame, network.send = timed_frame, timed_send
    return events


async def app(node: Any, options: dict[str, Any]) -> None:
    """The ``[app]`` of every node: record; the first leader after a barrier pushes."""
    events = instrument(node)
    out, claim, done = Path(options["out"]), Path(options["claim"]), Path(options["done"])
    while not claim.exists():  # noqa: ASYNC240
        with contextlib.suppress(Exception):  # no leader just now
            await node.barrier()
            if node.is_leader and _claim(claim):
                try:
                    await _pushes(node, events, int(options["samples"]), out)
                except Exception as exc:
                    _dump(out / "leader.json", node.node_id, [],
                          error=f"{type(exc).__name__}: {exc}")
                done.touch()  # noqa: ASYNC240
                return
        await asyncio.sleep(0.1)
    while not done.exists():  # noqa: ASYNC110, ASYNC240 - a follower records until the end
        await asyncio.sleep(0.2)
    _dump(out / f"events-{node.node_id}.json", node.node_id, events)


def _claim(path: Path) -> bool:
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


async def _pushes(node: Any, events: list[Event], samples: int, out: Path) -> None:
    queue = node.queue("latency-cluster")
    for _ in range(200):
        await queue.push(PAYLOAD)
    events.clear()
    for _ in range(samples):
        events.append((time.perf_counter_ns(), "push", ""))
        await queue.push(PAYLOAD)
        events.append((time.perf_counter_ns(), "push_end", ""))
    _dump(out / "leader.json", node.node_id, events)


def _dump(path: Path, node_id: str, events: list[Event], error: str | None = None) -> None:
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps({"node": node_id, "events": events, "error": error}))
    partial.replace(path)


def _first(events: list[Event], at: int, kind: str, peer: str | None = None,
           before: int | None = None) -> int | None:
    """When the first event ``kind`` (from or to ``peer``) at or after ``at`` happened in
    ``events`` (sorted); None when there is none, or it came after ``before``."""
    for i in range(bisect.bisect_left(events, at, key=_time), len(events)):
        t, k, p = events[i]
        if before is not None and t > before:
            return None
        if k == kind and (peer is None or p == peer):
            return t
    return None


def _time(event: Event) -> int:
    return event[0]


def trace(leader: str, timelines: dict[str, list[Event]], push: int) -> list[str]:
    """The merged timeline of push number ``push`` (us from its start), one line each."""
    own = sorted(timelines[leader])
    starts = [t for t, k, _ in own if k == "push"]
    ends = [t for t, k, _ in own if k == "push_end"]
    s, e = starts[push], ends[push]
    merged = sorted((t, node, k, p) for node, events in timelines.items()
                    for t, k, p in events if s <= t <= e)
    return [f"{(t - s) / 1000:8.1f}  node {node}  {k}{f' {p}' if p else ''}"
            for t, node, k, p in merged]


def analyse(leader: str, timelines: dict[str, list[Event]]) -> dict[str, Any]:
    """Each stage's p50 (us) along every push's critical path."""
    own = sorted(timelines[leader])
    followers = {n: sorted(e) for n, e in timelines.items() if n != leader}
    starts = [t for t, k, _ in own if k == "push"]
    ends = [t for t, k, _ in own if k == "push_end"]
    rows: list[list[float]] = []
    totals, leader_fsync, own_last, same_step = [], [], 0, 0
    for s, e in zip(starts, ends, strict=True):
        totals.append((e - s) / 1000)
        window = own[bisect.bisect_left(own, s, key=_time):
                     bisect.bisect_right(own, e, key=_time)]
        step = _first(window, s, "step")
        sent = _first(window, s, "send")
        done = _first(window, s, "completion")
        if step is None or sent is None or done is None:
            continue
        best: tuple[int, list[int]] | None = None
        for peer, timeline in followers.items():
            f_in = _first(timeline, sent, "in", leader, e)
            f_fsync = None if f_in is None else _first(timeline, f_in, "fsync", None, e)
            f_end = None if f_fsync is None else _first(timeline, f_fsync, "fsync_end", None, e)
            f_send = None if f_end is None else _first(timeline, f_end, "send", leader, e)
            back = None if f_send is None else _first(window, f_send, "in", peer)
            if f_in is None or f_fsync is None or f_end is None or f_send is None or back is None:
                continue
            if best is None or back < best[0]:
                best = (back, [f_in, f_fsync, f_end, f_send, back])
        if best is None:
            continue
        f_in, f_fsync, f_end, f_send, back = best[1]
        l_fsync = _first(window, sent, "fsync")
        l_end = None if l_fsync is None else _first(window, l_fsync, "fsync_end")
        if l_fsync is not None and l_end is not None:
            leader_fsync.append((l_end - l_fsync) / 1000)
            own_last += l_end > f_send
        reply_step = _first(window, back, "step")
        reply_step_end = None if reply_step is None else _first(window, reply_step, "step_end")
        same_step += reply_step is not None and reply_step_end is not None and (
            reply_step <= done <= reply_step_end)
        points = [s, step, sent, f_in, f_fsync, f_end, f_send, back, done, e]
        rows.append([(b - a) / 1000 for a, b in itertools.pairwise(points)])
    out: dict[str, Any] = {"p50_us": round(statistics.median(totals), 1) if totals else None,
                           "pushes": len(totals), "traced": len(rows)}
    for i, name in enumerate(STAGES):
        out[f"{name}_us"] = round(statistics.median(r[i] for r in rows), 1) if rows else None
    out["l_fsync_us"] = round(statistics.median(leader_fsync), 1) if leader_fsync else None
    out["leader_fsync_last"] = own_last
    out["completed_in_reply_step"] = same_step
    return out


async def measure(samples: int, traced: int = 0,
                  timeout: float = 300.0) -> dict[str, Any]:
    from lazily_queue.demo.processes import NodeProcess

    root = Path(tempfile.mkdtemp(prefix="lazily-latency-cluster-"))
    members = [1, 2, 3]
    app_options = {"entry": "benchmarks.latency_cluster:app", "samples": samples,
                   "out": str(root), "claim": str(root / "claim"), "done": str(root / "done")}
    env = node_env(**{SECRET_ENV: secrets.token_hex(16)})
    procs = [NodeProcess(i, _config(root, i, members, app_options), cwd=ROOT, env=env,
                         log_path=root / f"node{i}.log") for i in members]
    try:
        await start_nodes(procs)
        deadline = time.monotonic() + timeout
        while not (root / "leader.json").exists() or (
                len(list(root.glob("*.json"))) < len(members)  # noqa: ASYNC240
                and not _failed(root)):
            dead = [p for p in procs if not p.alive]
            if dead:
                raise RuntimeError(f"node {dead[0].node_id} exited: {dead[0].log_tail(5)}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"no result within {timeout:.0f}s")
            await asyncio.sleep(0.1)
        leader = json.loads((root / "leader.json").read_text())
        if leader["error"]:
            raise RuntimeError(f"the pushing leader failed: {leader['error']}")
        timelines = {leader["node"]: [tuple(e) for e in leader["events"]]}
        for path in root.glob("events-*.json"):  # noqa: ASYNC240
            data = json.loads(path.read_text())
            timelines[data["node"]] = [tuple(e) for e in data["events"]]
        figures = analyse(leader["node"], timelines)  # type: ignore[arg-type]
        figures["traces"] = [trace(leader["node"], timelines, i)  # type: ignore[arg-type]
                             for i in range(samples // 2, min(samples, samples // 2 + traced))]
        return figures
    finally:
        for proc in procs:
            await proc.stop()
        reap()
        shutil.rmtree(root, ignore_errors=True)


def _failed(root: Path) -> bool:
    return bool(json.loads((root / "leader.json").read_text())["error"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=2000, help="pushes (default 2,000)")
    parser.add_argument("--trace", type=int, default=0,
                        help="also print the merged timeline of this many pushes")
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    args = parser.parse_args()
    if args.samples < 1:
        parser.error("--samples must be at least 1")
    figures = asyncio.run(measure(args.samples, args.trace))
    for lines in figures.pop("traces"):
        print("\n".join(lines), end="\n\n")
    print(f"3 members, {args.samples:,} pushes of 100 B one at a time: p50 "
          f"{figures['p50_us']} us; {figures['traced']:,} followed end to end")
    for name in STAGES:
        print(f"  {name:14s} {figures[f'{name}_us']} us")
    print(f"leader's own fsync p50 {figures['l_fsync_us']} us, ended after the first reply "
          f"was sent in {figures['leader_fsync_last']:,} pushes; result handed over in the "
          f"step the reply started in {figures['completed_in_reply_step']:,}")
    if args.json:
        print(json.dumps(figures, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
