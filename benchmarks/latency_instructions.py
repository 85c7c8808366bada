"""Instructions and loop turns per 1-in-flight push, this tree against a base revision,
counted by Valgrind's callgrind: what a push costs in CPU, which load does not move.

    python benchmarks/latency_instructions.py [--base REV] [--pushes N] [--json]

Each tree (this checkout's, uncommitted changes included, and ``--base``'s, exported
with ``git archive``; both copied into one temporary directory) runs the same workloads
under ``valgrind --tool=callgrind`` with ``PYTHONHASHSEED=0`` and the garbage collector
off: 100-byte pushes one at a time on one member (``durability="fsync"``, Unix socket),
the same with the node process's monitor beside it, and on 3 in-process members over
Unix sockets (the instructions of all three): pushed back to back, the leader's new
commit index rides on the next push's append; ``three_members_apart`` lets the loop turn
``APART_TURNS`` times after each push, as a client across the network leaves it, so the
commit index goes out on its own (the round a remote client's push costs). Raft timings
are stretched 50 times while the leader is elected, as callgrind slows the run about
that much.

What a push costs must not depend on how long it took, so once a leader is elected
nothing timed runs between pushes: every fsync runs on the loop's thread (the path quick
disks take), and the tick timers, heartbeats, election and fallback timeouts, the links'
keepalives and probes and the monitor's samplers are parked (their periods made far
longer than the run, the keepalives and probes stopped). Each of the ``N`` measured
pushes is bracketed by a marker (``os.getppid``) on which callgrind dumps its counters,
so every instruction counts against the push it ran beside (work a push leaves to run
after its ack lands in the next one); the figure is the mean over the pushes between the
10th and 90th percentile, which a stray timer or a table resize does not move. Loop
turns and callbacks run per push (``asyncio``'s ``_run_once`` and its ready queue) are
counted the same way.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
#: The parts of a tree measured: PYTHONPATH puts each tree's first, ROOT after them.
TREE = ("lazily_queue", "transports")
sys.path.append(str(ROOT))
from benchmarks.tree_copies import callgrind_totals, copy_here, export  # noqa: E402

PAYLOAD = b"x" * 100
STRETCH = 50.0
#: A period (seconds) no run reaches: a timer set to it never fires.
PARKED = 1e9
#: Loop turns after each push of ``three_members_apart``: the commit publication, the
#: followers' step on it and the leader's on what they answer, with room to spare.
APART_TURNS = 6
#: figure -> (members, with the monitor, loop turns after each push)
FIGURES: dict[str, tuple[int, bool, int]] = {
    "one_member": (1, False, 0),
    "one_member_monitor": (1, True, 0),
    "three_members": (3, False, 0),
    "three_members_apart": (3, False, APART_TURNS),
}


async def pushes(members: int, monitor: bool, count: int, apart: int = 0) -> dict[str, Any]:
    """``count`` pushes, each between two markers and followed by ``apart`` loop turns
    (``--child``)."""
    from lazily_queue import stale_peers
    from lazily_queue.node import Node
    from lazily_queue.raft import fsync
    from lazily_queue.raft.engine_config import EngineConfig

    fsync.InlinePolicy.__init__.__defaults__ = (math.inf, fsync.INLINE_BYTES)
    stale_peers.EVERY = PARKED  # the stale-peer look resolves addresses on a thread
    engine = EngineConfig(election_timeout_min=0.3 * STRETCH,
                          election_timeout_max=0.6 * STRETCH,
                          heartbeat_interval=0.05 * STRETCH,
                          leader_fallback_timeout=1.0 * STRETCH)
    loop = asyncio.get_running_loop()
    turns = [0, 0]
    run_once = loop._run_once  # type: ignore[attr-defined]

    def counted() -> None:
        turns[0] += 1
        turns[1] += len(loop._ready)  # type: ignore[attr-defined]
        run_once()

    loop._run_once = counted  # type: ignore[attr-defined]
    with tempfile.TemporaryDirectory(prefix="latency-instructions-") as root:
        peers: dict[int | str, str] = {i: f"unix://{root}/n{i}.sock"
                                       for i in range(1, members + 1)}
        nodes = [Node(i, data_dir=f"{root}/d{i}", listen=peers[i],
                      peers=peers if members > 1 else None,
                      secret="latency-instructions-secret-0123456789", engine=engine,
                      tick_interval=0.02 * STRETCH, op_timeout=600,
                      maintenance_interval=None, seed=i)
                 for i in range(1, members + 1)]
        for node in nodes:
            await node.start()
        leader = None
        while leader is None:
            leader = next((n for n in nodes if n.is_leader), None)
            await asyncio.sleep(0.05)
        for node in nodes:
            _park(node)
        monitors = []
        if monitor:
            from lazily_queue.monitor import Monitor

            for node in nodes:
                monitors.append(Monitor(node, history_interval=PARKED, history_window=PARKED,
                                        peer_interval=PARKED))
                monitors[-1].start()
        queue = leader.queue("latency")
        for _ in range(300):  # every heartbeat and deadline is now set from parked periods
            await queue.push(PAYLOAD)
        gc.collect()
        gc.disable()
        per_push: list[list[int]] = []
        for _ in range(count):
            before = list(turns)
            os.getppid()  # callgrind dumps here
            await queue.push(PAYLOAD)
            for _ in range(apart):
                await asyncio.sleep(0)
            per_push.append([turns[0] - before[0], turns[1] - before[1]])
        os.getppid()
        gc.enable()
        for mon in monitors:
            await mon.stop()
        for node in nodes:
            await node.stop()
    import lazily_queue

    return {"turns": _middle([t for t, _ in per_push]),
            "callbacks": _middle([c for _, c in per_push]),
            "lazily_queue": lazily_queue.__file__}


def _park(node: Any) -> None:
    """Nothing timed runs on ``node`` from now on (see the module docstring)."""
    driver = node.driver
    driver.tick_interval = PARKED
    if driver._timer is not None:
        driver._timer.cancel()
    driver._arm_timer()
    raft = driver.replica.engine
    raft._light_period = math.inf
    conf = raft._SyncObj__conf
    conf.appendEntriesPeriod = PARKED
    conf.raftMinTimeout = conf.raftMaxTimeout = PARKED
    conf.leaderFallbackTimeout = PARKED
    # The links' keepalives (every quarter of the liveness window, seconds apart): under
    # callgrind they fired every few pushes, more often the busier the machine.
    keepalive = getattr(driver.network, "_keepalive", None)
    if keepalive is not None:
        keepalive.cancel()
    # A link this member does not dial checks on its peer every half second while up.
    mesh = getattr(driver.network, "_mesh", None)
    for link in getattr(mesh, "_links", {}).values():
        task = link._dialer
        if task is not None and task.get_name().startswith("transports-probe-"):
            task.cancel()


def _middle(values: list[float]) -> float:
    """The mean of ``values`` between their 10th and 90th percentile."""
    ordered = sorted(values)
    cut = len(ordered) // 10
    kept = ordered[cut:len(ordered) - cut] or ordered
    return sum(kept) / len(kept)


def measure(tree: Path, figure: str, count: int, work: Path) -> dict[str, Any]:
    """Instructions, loop turns and callbacks per push of ``figure`` on ``tree``."""
    out_dir = Path(tempfile.mkdtemp(dir=work))
    transports = tree / "transports"
    path = os.pathsep.join(str(p) for p in (tree, transports) if p.exists())
    env = dict(os.environ, PYTHONPATH=path, PYTHONHASHSEED="0")
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--dump-before=getppid", "--dump-instr=no",
         "--dump-line=no", f"--callgrind-out-file={out_dir}/cg.%p", sys.executable,
         str(Path(__file__).resolve()), "--child", figure, "--pushes", str(count)],
        env=env, capture_output=True, text=True, check=False, cwd=tree)
    if done.returncode != 0:
        raise SystemExit(f"the run on {tree} failed:\n{done.stdout[-2000:]}\n"
                         f"{done.stderr[-3000:]}")
    totals = callgrind_totals(out_dir, "cg.*.*")
    # dump 1: before the first marker; dump k + 1: the k-th push
    if sorted(totals) != list(range(1, count + 2)):
        raise SystemExit(f"the run on {tree} dumped {len(totals)} times, not {count + 1}")
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    if not Path(report.pop("lazily_queue")).resolve().is_relative_to(tree.resolve()):
        raise SystemExit(f"the run on {tree} imported another lazily_queue")
    report["instructions"] = _middle([totals[k] for k in range(2, count + 2)])
    shutil.rmtree(out_dir, ignore_errors=True)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="HEAD~1", help="the revision to compare with")
    parser.add_argument("--pushes", type=int, default=200,
                        help="pushes measured one member (default 200; half on three)")
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    parser.add_argument("--child", choices=sorted(FIGURES), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.pushes < 1:
        parser.error("--pushes must be at least 1")
    if args.child:
        members, monitor, apart = FIGURES[args.child]
        print(json.dumps(asyncio.run(pushes(members, monitor, args.pushes, apart))))
        return 0
    if shutil.which("valgrind") is None:
        print("error: valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="latency-instructions-"))
    rows: dict[str, Any] = {}
    try:
        base_tree, this_tree = export(args.base, work, TREE), copy_here(work, TREE)
        for figure, (members, _, _) in FIGURES.items():
            count = args.pushes if members == 1 else max(1, args.pushes // 2)
            base = measure(base_tree, figure, count, work)
            this = measure(this_tree, figure, count, work)
            rows[figure] = {"base": base, "this": this,
                            "ratio": round(this["instructions"] / base["instructions"], 4)}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"per 1-in-flight push, base {args.base} vs this tree")
    print(f"{'figure':20} {'base instr':>11} {'this instr':>11} {'ratio':>6} "
          f"{'turns':>11} {'callbacks':>11}")
    for figure, row in rows.items():
        base, this = row["base"], row["this"]
        print(f"{figure:20} {base['instructions']:11.0f} {this['instructions']:11.0f} "
              f"{row['ratio']:6.3f} {base['turns']:5.2f}/{this['turns']:<5.2f} "
              f"{base['callbacks']:5.2f}/{this['callbacks']:<5.2f}")
    if args.json:
        print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
