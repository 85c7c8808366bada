"""A flood of clients against a three-member cluster: does it keep its leader, and what
does it do to commit latency? The same flood against NATS JetStream R3, in the same run.

    python benchmarks/client_flood.py [--flooders N] [--seconds S] [--peers none|nats]
                                      [--rounds R] [--clients-at members|leader]
                                      [--commit-target S] [--rate N]
                                      [--durability fsync|none|both] [--json]
    lazily-queue bench client_flood ...

Three ``lazily-queue node`` processes (Raft over Unix sockets, ``durability = "fsync"``)
serve clients on Unix sockets. A probe client pushes one item at a time and records each
push's commit latency, first alone (baseline), then while N flooder processes (4 clients
each, every client with 512 pushes outstanding) and one greedy client (10,000 pushes at
once on one link) push as fast as they can (the probe starts 1 s after every flooder
process has linked its clients, however long they took to start). The flooder processes
share a session of their own (:mod:`benchmarks.client_flood_group`): with Linux's
autogroup scheduling a probe in their session would wait for a CPU behind them, which
measures the harness, not the cluster; the probe's own wait for a CPU per time slice
under the flood is reported. The probe prefers the leader; each flooder process links to
a member in turn and stays on it (``--clients-at members``, the default: clients beside
their member, as web workers beside their node, and as NATS's connections spread over
its servers), or every flood client prefers the leader too (``--clients-at leader``: one
member serves the whole flood). Members bound what they serve (512 requests in flight
per client, 1,024 in all and a few more for clients with little in flight; the rest
waits unread on the links), so the flood can neither grow a member's memory nor crowd
heartbeats out of its event loop, and serve clients fairly (the lightest first, a
bounded window of ops proposed at once), so the probe's op is proposed as soon as it is
read; every queue shares the one Raft log, so it then commits behind the flood's ops
proposed before it (at most a window of them per member, which shrinks while the flood's
commits take longer than the members' ``client_commit_target``; ``--commit-target 0``
keeps it whole). The run reports the leader and term before, during (sampled every 250
ms) and after the flood, the probe's p50/p99 in both phases and its p50 under the flood
as a multiple of its p50 alone, the flood's committed pushes/s, the most requests a
member held in flight and the members the flood's clients ended linked to.

Then (``--peers nats``, the default) the same workload against NATS JetStream R3
(:mod:`benchmarks.client_flood_nats`: three clustered ``nats-server``, file storage, a
nats-py probe publishing one at a time, flooder processes of nats-py connections
publishing to another stream, each stream its own Raft group), reporting the same
figures (acknowledged publishes/s, and the two streams' leaders before and after), and
the probe's latency under the flood once more with the probe publishing to the flood's
stream (one Raft group for both, as lazily-queue's one log). NATS is skipped with a line saying how
to install it when ``nats-server`` or nats-py is missing. A table ends the run, a row
per system; with ``--json`` the last line is one JSON object. ``--rounds R`` runs it
all R times (the systems take turns) and reports each figure's median, with each
round's flood p50: on a shared machine one round can be far off the next.

Each system floods at its own saturation by default, so the probe's latency compares
two saturated systems at different rates. ``--rate N`` has both floods offer the same
load: N pushes (publishes) per second in all, split evenly over every flood client (the
greedy one included), open loop (:mod:`benchmarks.flood_pacing`): each client sends on a
schedule for the flood's seconds from when every flooder is ready (so the schedules span
the probe's time), with at most its usual bound outstanding (512, 10,000 for the greedy
one), and counts each push it could not send on time as behind schedule, never sent; a
system that cannot keep up at N shows pushes behind, and commits less than N. Pushes
behind because the flooder's own process woke over 0.1 s late (short of a CPU) are
counted apart: the flooding side's shortfall, not the system's. The figures and the
table then carry the offered rate and the pushes behind beside the rate committed.
The printing and the table are :mod:`benchmarks.client_flood_report`'s.

``--durability none`` runs the members with ``durability = "none"``: each writes its log
and acknowledges before any fsync, the durability of the Debian ``nats-server`` (which
has no ``sync_interval: always``), so the two compare like for like; ``both`` runs
lazily-queue once with each (two rows).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

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
from benchmarks.client_flood_report import (  # noqa: E402
    SYSTEMS,
    over_rounds,
    print_lazily,
    print_nats,
    table,
)
from benchmarks.flood_pacing import client_rate, rate_argument  # noqa: E402
from benchmarks.peers_common import (  # noqa: E402
    PAYLOAD,
    cpu_seconds,
    flood_cpu,
    missing,
    node_env,
    percentiles,
    reap,
    start_nodes,
)

SECRET_ENV, TOKEN_ENV = "LAZILY_FLOOD_SECRET", "LAZILY_FLOOD_TOKEN"

FLOODER = MARK_READY + r'''
import asyncio, json, sys, time
from lazily_queue import connect
from benchmarks.flood_pacing import flood
async def client(addresses, token, until, inflight, counts, prefer, rate):
    async with connect(addresses, ("flood", token), max_in_flight=inflight,
                       op_timeout=120, prefer_leader=prefer) as c:
        q = c.queue("flood")
        linked(int(sys.argv[4]))
        async def push():
            await q.push(b"x" * 100)
            counts[0] += 1
        if rate is not None:  # every schedule spans the probe's time: from the flood on
            await flood_on()
            until = time.monotonic() + float(sys.argv[3])
        behind = await flood(push, inflight, until, rate)
        counts[1], counts[2] = counts[1] + behind.total, counts[2] + behind.late
        return c.member
async def main():
    addresses, token = sys.argv[1].split(","), sys.argv[2].encode()
    seconds, clients, inflight = float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    prefer, rate = sys.argv[6] == "leader", json.loads(sys.argv[7])
    counts = [0, 0, 0]
    until = time.monotonic() + seconds
    cpu = time.process_time()
    members = await asyncio.gather(*(client(addresses, token, until, inflight, counts, prefer,
                                            rate) for _ in range(clients)))
    print(json.dumps({"acked": counts[0], "behind": counts[1], "late": counts[2],
                      "members": members,
                      "cpu": time.process_time() - cpu}), flush=True)
asyncio.run(main())
'''


def _config(root: Path, node: int, commit_target: float | None = None,
            durability: str = "fsync") -> Path:
    peers = "\n".join(f'{i} = "unix://{root}/n{i}.sock"' for i in (1, 2, 3))
    target = [] if commit_target is None else [f"client_commit_target = {commit_target}"]
    text = "\n".join([*target,
        f"id = {node}", 'cluster = "flood-bench"', f'data_dir = "{root}/d{node}"',
        f'listen = "unix://{root}/n{node}.sock"', 'http = "127.0.0.1:0"',
        f'durability = "{durability}"', f'secret_env = "{SECRET_ENV}"', "startup_timeout = 60",
        f'clients = "unix://{root}/c{node}.sock"', "", "[peers]", peers, "",
        "[[client]]", 'name = "flood"', f'token_env = "{TOKEN_ENV}"', 'produce = ["*"]',
        'consume = ["*"]', ""])
    path = root / f"node{node}.toml"
    path.write_text(text)
    return path


async def _probe(client: Any, seconds: float) -> list[float]:
    q = client.queue("probe")
    samples: list[float] = []
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        started = time.perf_counter()
        await q.push(PAYLOAD)
        samples.append(time.perf_counter() - started)
    return samples


async def _watch(procs: list[Any], session: aiohttp.ClientSession, stop: asyncio.Event,
                 seen: list[tuple[Any, Any]], in_flight: list[int]) -> None:
    while not stop.is_set():
        for proc in procs:
            await proc.poll(session)
            status = proc.status
            if status is None:
                continue
            if status.get("state") == "leader":
                seen.append((status["node"], status["term"]))
            in_flight.append(int(status.get("clients", {}).get("in_flight", 0)))
        await asyncio.sleep(0.25)


#: Where the flood's clients link: ``members``: flooder process k starts at member
#: k mod 3 and stays there while it is up (clients beside their member, as web workers
#: beside their node; NATS's connections spread over its servers likewise);
#: ``leader``: every client prefers the leader (the client's default), so the leader
#: serves the whole flood.
CLIENTS_AT = ("members", "leader")


#: The lazily-queue runs of each ``--durability``: (system key, the members' durability).
LAZILY_RUNS = {"fsync": [("lazily", "fsync")], "none": [("lazily_none", "none")],
               "both": [("lazily", "fsync"), ("lazily_none", "none")]}


class RoundFailed(RuntimeError):
    """lazily-queue's round did not finish: why, while doing what, the nodes' last lines."""


#: Seconds a lazily-queue round may take beyond four times its flood's (a round that
#: takes longer is stuck, and says where).
ROUND_LIMIT = 120.0


async def run(flooders: int, seconds: float, clients_at: str = "members",
              commit_target: float | None = None, rate: float | None = None,
              durability: str = "fsync") -> dict[str, Any]:
    from lazily_queue import connect
    from lazily_queue.demo.processes import NodeProcess

    root = Path(tempfile.mkdtemp(prefix="lazily-flood-"))
    token = secrets.token_hex(16)
    env = node_env(**{SECRET_ENV: secrets.token_hex(16), TOKEN_ENV: token})
    procs = [NodeProcess(i, _config(root, i, commit_target, durability), cwd=ROOT, env=env,
                         log_path=root / f"node{i}.log") for i in (1, 2, 3)]
    addresses = [f"unix://{root}/c{i}.sock" for i in (1, 2, 3)]
    out: dict[str, Any] = {}
    flood: asyncio.subprocess.Process | None = None
    stage = "starting the nodes"
    limit = ROUND_LIMIT + 4 * seconds
    each = json.dumps(client_rate(rate, 4 * flooders + 1))
    try:
        async with asyncio.timeout(limit), aiohttp.ClientSession() as session:
            await start_nodes(procs)
            stage = "connecting the probe"
            async with connect(addresses, ("flood", token), op_timeout=60) as probe:
                stage = "probing alone"
                await probe.barrier(timeout=60)
                pids = [proc.pid for proc in procs]
                members = cpu_and_wait(pids)
                baseline = await _probe(probe, min(seconds, 5.0))
                out["members_wait_per_run_alone"] = wait_per_run(members, cpu_and_wait(pids))
                seen: list[tuple[Any, Any]] = []
                in_flight: list[int] = []
                stop = asyncio.Event()
                watcher = asyncio.create_task(_watch(procs, session, stop, seen, in_flight))
                await asyncio.sleep(0.5)
                before = seen[-1] if seen else None
                stage = "starting the flood"
                cpu_before, flood_began = sum(map(cpu_seconds, pids)), time.monotonic()
                argvs = []
                for k, (clients, bound) in enumerate(
                        [*[("4", "512")] * flooders, ("1", "10000")]):
                    turn = k % len(addresses) if clients_at == "members" else 0
                    argvs.append([sys.executable, "-c", FLOODER,
                                  ",".join(addresses[turn:] + addresses[:turn]), token,
                                  str(seconds), clients, bound, clients_at, each])
                flood = await start_flood(argvs, env, ready=root / "ready")
                stage = "waiting for every flooder to link its clients"
                await flood_ready(flood, root / "ready", len(argvs))
                release_flood(root / "ready")
                await asyncio.sleep(1.0)  # the flood is on
                stage = "probing under the flood"
                waited, members = run_queue_wait(), cpu_and_wait(pids)
                during = await _probe(probe, max(1.0, seconds - 2.0))
                out["probe_cpu_wait_ms"] = wait_per_wake(waited, run_queue_wait())
                out["members_wait_per_run"] = wait_per_run(members, cpu_and_wait(pids))
                stage = "waiting for the flooders to end"
                pushed, behind, late, clients_cpu = 0, 0, 0, 0.0
                linked: dict[str, int] = {}
                for text in await flood_outputs(flood):
                    report = json.loads(text.strip().splitlines()[-1])
                    pushed, behind = pushed + report["acked"], behind + report["behind"]
                    late += report["late"]
                    clients_cpu += report["cpu"]
                    for member in report["members"]:
                        linked[str(member)] = linked.get(str(member), 0) + 1
                out.update(flood_cpu(pids, cpu_before, time.monotonic() - flood_began,
                                     pushed, clients_cpu))
                stop.set()
                await watcher
                await asyncio.sleep(0.5)
                for proc in procs:
                    await proc.poll(session)
                after = next(((s["node"], s["term"]) for p in procs if (s := p.status)
                              and s.get("state") == "leader"), None)
                out["members_durability"] = sorted({
                    str((p.status or {}).get("vitals", {}).get("durability")) for p in procs})
    except TimeoutError as exc:
        why = str(exc) or f"not done within {limit:g} s"
        tails = "; ".join(f"node {p.node_id}: {' / '.join(p.log_tail(3).splitlines())}"
                          for p in procs)
        raise RoundFailed(f"lazily-queue's round timed out while {stage} ({why}); the "
                          f"nodes' last log lines: {tails}") from None
    except FloodFailed as exc:
        raise RoundFailed(f"lazily-queue's round failed while {stage}: {exc}") from None
    finally:
        await stop_flood(flood)
        for proc in procs:
            await proc.stop()
        reap()
        shutil.rmtree(root, ignore_errors=True)
    leaders = sorted({f"{node}@{term}" for node, term in seen})
    base50, base99 = percentiles(baseline)
    flood50, flood99 = percentiles(during)
    out.update({
        "leader_before": before, "leader_after": after, "leaders_seen": leaders,
        "leader_kept": before is not None and before == after and len(leaders) == 1,
        "baseline_p50_ms": base50, "baseline_p99_ms": base99, "baseline_samples": len(baseline),
        "flood_p50_ms": flood50, "flood_p99_ms": flood99, "flood_samples": len(during),
        "flood_p50_ratio": round(flood50 / base50, 1) if base50 else None,
        "flood_pushes_per_s": round(pushed / seconds), "flood_rate": rate,
        "flood_behind": behind, "flood_behind_late": late,
        "max_member_in_flight": max(in_flight, default=0),
        "flood_clients_at": linked,
    })
    return out


async def run_nats(flooders: int, seconds: float, rate: float | None = None
                   ) -> dict[str, Any]:
    from benchmarks import client_flood_nats

    root = Path(tempfile.mkdtemp(prefix="lazily-flood-nats-"))
    try:
        return await client_flood_nats.run(root / "nats", flooders, seconds, rate=rate)
    finally:
        reap()
        shutil.rmtree(root, ignore_errors=True)


async def run_all(flooders: int, seconds: float, peers: str,
                  clients_at: str = "members", commit_target: float | None = None,
                  rate: float | None = None, durability: str = "fsync") -> dict[str, Any]:
    """Every system's figures (or ``{"error": ...}``) and the peers skipped; lazily-queue
    with ``durability`` (``"fsync"``, ``"none"``, or ``"both"``: one run of each)."""
    out: dict[str, Any] = {"flooders": flooders, "clients_per_flooder": 4, "seconds": seconds,
                           "clients_at": clients_at, "rate": rate, "systems": {},
                           "skipped": {}}
    for key, mode in LAZILY_RUNS[durability]:
        out["systems"][key] = await run(flooders, seconds, clients_at, commit_target, rate,
                                        mode)
        print_lazily(out["systems"][key], flooders, seconds, clients_at, commit_target, rate,
                     mode)
    if peers == "nats":
        why = missing("nats-server", "nats", "nats-py")
        if why is not None:
            out["skipped"]["nats"] = why
            print(f"{SYSTEMS['nats']}: skipped ({why})", flush=True)
            return out
        try:
            figures = await run_nats(flooders, seconds, rate)
        except Exception as exc:
            cause = " | ".join(str(exc).split("\n"))
            out["systems"]["nats"] = {"error": f"{type(exc).__name__}: {cause}"}
            print(f"{SYSTEMS['nats']}: failed: {out['systems']['nats']['error']}", flush=True)
            return out
        out["systems"]["nats"] = figures
        print_nats(figures)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--flooders", type=int, default=4, help="flooding processes")
    parser.add_argument("--seconds", type=float, default=10.0, help="flood duration")
    parser.add_argument("--peers", choices=("none", "nats"), default="nats",
                        help="also run the flood against NATS JetStream R3 (default)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="run everything this many times, one system after the "
                             "other, and report each figure's median (default 1)")
    parser.add_argument("--clients-at", choices=CLIENTS_AT, default="members",
                        help="members (default): each flooder process links to a member in "
                             "turn and stays; leader: every client prefers the leader")
    parser.add_argument("--commit-target", type=float, default=None, metavar="S",
                        help="the members' client_commit_target (seconds; 0: a fixed "
                             "window; default: the members' default)")
    parser.add_argument("--rate", type=rate_argument, default=None, metavar="N",
                        help="the flood offers N pushes/s in all, open loop, split evenly "
                             "over its clients (default: each floods as fast as it can)")
    parser.add_argument("--durability", choices=tuple(LAZILY_RUNS), default="fsync",
                        help="the lazily-queue members' durability: fsync (default: each "
                             "acknowledges after its fsync), none (writes its log and "
                             "acknowledges before any fsync, as this nats-server does), "
                             "both (one run of each)")
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    args = parser.parse_args()
    if args.flooders < 1 or args.seconds < 3 or args.rounds < 1:
        parser.error("--flooders >= 1, --seconds >= 3 and --rounds >= 1")
    if args.commit_target is not None and not 0 <= args.commit_target < float("inf"):
        parser.error("--commit-target is a number of seconds, 0 or more")
    runs: list[dict[str, Any]] = []
    try:
        for number in range(1, args.rounds + 1):
            if args.rounds > 1:
                print(f"-- round {number} of {args.rounds}", flush=True)
            runs.append(asyncio.run(run_all(args.flooders, args.seconds, args.peers,
                                            args.clients_at, args.commit_target,
                                            args.rate, args.durability)))
    except RoundFailed as exc:
        print(f"client_flood: {exc}", file=sys.stderr)
        return 1
    finally:
        reap()
    out = dict(runs[-1], rounds=args.rounds,
               systems=over_rounds([run["systems"] for run in runs]))
    print()
    if args.rounds > 1:
        out["each_round"] = [run["systems"] for run in runs]
        print(f"medians of {args.rounds} rounds; flood p50 (ms) in each round: " + "; ".join(
            f"{SYSTEMS[key]} {', '.join(f'{v:.2f}' for v in figures['flood_p50_rounds'])}"
            for key, figures in out["systems"].items() if "flood_p50_rounds" in figures))
    print(table(out["systems"]))
    print("probe: one push/publish at a time, its own client in this process; flood: "
          "acknowledged (committed on a majority) pushes/publishes per second")
    nats_figures = out["systems"].get("nats", {})
    if "error" not in nats_figures and nats_figures.get("sync_always") is False:
        print("note: this nats-server acknowledges before fsync (no `sync_interval: always`); "
              "lazily-queue fsyncs before acknowledging"
              + ("" if args.durability == "fsync" else
                 " (its `durability none` row: before any fsync, as NATS)"))
    if args.json:
        print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
