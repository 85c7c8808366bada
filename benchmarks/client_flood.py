"""A flood of clients against a three-member cluster: does it keep its leader, and what
does it do to commit latency? The same flood against NATS JetStream R3, in the same run.

    python benchmarks/client_flood.py [--flooders N] [--seconds S] [--peers none|nats]
                                      [--rounds R] [--clients-at members|leader]
                                      [--commit-target S] [--json]
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
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
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
    run_queue_wait,
    start_flood,
    stop_flood,
    wait_per_run,
    wait_per_wake,
)
from benchmarks.peers_common import (  # noqa: E402
    PAYLOAD,
    cpu_seconds,
    flood_cpu,
    markdown_table,
    median_systems,
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
async def client(addresses, token, until, inflight, counts, prefer):
    async with connect(addresses, ("flood", token), max_in_flight=inflight,
                       op_timeout=120, prefer_leader=prefer) as c:
        q = c.queue("flood")
        linked(int(sys.argv[4]))
        async def lane():
            while time.monotonic() < until:
                await q.push(b"x" * 100)
                counts[0] += 1
        await asyncio.gather(*(lane() for _ in range(inflight)))
        return c.member
async def main():
    addresses, token = sys.argv[1].split(","), sys.argv[2].encode()
    seconds, clients, inflight = float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    prefer = sys.argv[6] == "leader"
    counts = [0]
    until = time.monotonic() + seconds
    cpu = time.process_time()
    members = await asyncio.gather(*(client(addresses, token, until, inflight, counts, prefer)
                                     for _ in range(clients)))
    print(json.dumps({"acked": counts[0], "members": members,
                      "cpu": time.process_time() - cpu}), flush=True)
asyncio.run(main())
'''


def _config(root: Path, node: int, commit_target: float | None = None) -> Path:
    peers = "\n".join(f'{i} = "unix://{root}/n{i}.sock"' for i in (1, 2, 3))
    target = [] if commit_target is None else [f"client_commit_target = {commit_target}"]
    text = "\n".join([*target,
        f"id = {node}", 'cluster = "flood-bench"', f'data_dir = "{root}/d{node}"',
        f'listen = "unix://{root}/n{node}.sock"', 'http = "127.0.0.1:0"',
        'durability = "fsync"', f'secret_env = "{SECRET_ENV}"', "startup_timeout = 60",
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


class RoundFailed(RuntimeError):
    """lazily-queue's round did not finish: why, while doing what, the nodes' last lines."""


#: Seconds a lazily-queue round may take beyond four times its flood's (a round that
#: takes longer is stuck, and says where).
ROUND_LIMIT = 120.0


async def run(flooders: int, seconds: float, clients_at: str = "members",
              commit_target: float | None = None) -> dict[str, Any]:
    from lazily_queue import connect
    from lazily_queue.demo.processes import NodeProcess

    root = Path(tempfile.mkdtemp(prefix="lazily-flood-"))
    token = secrets.token_hex(16)
    env = node_env(**{SECRET_ENV: secrets.token_hex(16), TOKEN_ENV: token})
    procs = [NodeProcess(i, _config(root, i, commit_target), cwd=ROOT, env=env,
                         log_path=root / f"node{i}.log") for i in (1, 2, 3)]
    addresses = [f"unix://{root}/c{i}.sock" for i in (1, 2, 3)]
    out: dict[str, Any] = {}
    flood: asyncio.subprocess.Process | None = None
    stage = "starting the nodes"
    limit = ROUND_LIMIT + 4 * seconds
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
                for k, (clients, each) in enumerate(
                        [*[("4", "512")] * flooders, ("1", "10000")]):
                    turn = k % len(addresses) if clients_at == "members" else 0
                    argvs.append([sys.executable, "-c", FLOODER,
                                  ",".join(addresses[turn:] + addresses[:turn]), token,
                                  str(seconds), clients, each, clients_at])
                flood = await start_flood(argvs, env, ready=root / "ready")
                stage = "waiting for every flooder to link its clients"
                await flood_ready(flood, root / "ready", len(argvs))
                await asyncio.sleep(1.0)  # the flood is on
                stage = "probing under the flood"
                waited, members = run_queue_wait(), cpu_and_wait(pids)
                during = await _probe(probe, max(1.0, seconds - 2.0))
                out["probe_cpu_wait_ms"] = wait_per_wake(waited, run_queue_wait())
                out["members_wait_per_run"] = wait_per_run(members, cpu_and_wait(pids))
                stage = "waiting for the flooders to end"
                pushed, linked, clients_cpu = 0, {}, 0.0
                for text in await flood_outputs(flood):
                    report = json.loads(text.strip().splitlines()[-1])
                    pushed += report["acked"]
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
        "flood_pushes_per_s": round(pushed / seconds),
        "max_member_in_flight": max(in_flight, default=0),
        "flood_clients_at": linked,
    })
    return out


#: (key, title) of each system in the table.
SYSTEMS = {"lazily": "lazily-queue", "nats": "NATS JetStream R3",
           "nats_shared": "NATS R3, probe on the flood's stream"}


async def run_nats(flooders: int, seconds: float) -> dict[str, Any]:
    from benchmarks import client_flood_nats

    root = Path(tempfile.mkdtemp(prefix="lazily-flood-nats-"))
    try:
        return await client_flood_nats.run(root / "nats", flooders, seconds)
    finally:
        reap()
        shutil.rmtree(root, ignore_errors=True)


async def run_all(flooders: int, seconds: float, peers: str,
                  clients_at: str = "members", commit_target: float | None = None,
                  ) -> dict[str, Any]:
    """Every system's figures (or ``{"error": ...}``) and the peers skipped."""
    out: dict[str, Any] = {"flooders": flooders, "clients_per_flooder": 4, "seconds": seconds,
                           "clients_at": clients_at, "systems": {}, "skipped": {}}
    out["systems"]["lazily"] = await run(flooders, seconds, clients_at, commit_target)
    _print_lazily(out["systems"]["lazily"], flooders, seconds, clients_at, commit_target)
    if peers == "nats":
        why = missing("nats-server", "nats", "nats-py")
        if why is not None:
            out["skipped"]["nats"] = why
            print(f"{SYSTEMS['nats']}: skipped ({why})", flush=True)
            return out
        try:
            figures = await run_nats(flooders, seconds)
        except Exception as exc:
            cause = " | ".join(str(exc).split("\n"))
            out["systems"]["nats"] = {"error": f"{type(exc).__name__}: {cause}"}
            print(f"{SYSTEMS['nats']}: failed: {out['systems']['nats']['error']}", flush=True)
            return out
        out["systems"]["nats"] = figures
        _print_nats(figures)
    return out


def _print_lazily(out: dict[str, Any], flooders: int, seconds: float,
                  clients_at: str, commit_target: float | None = None) -> None:
    from lazily_queue import ClientAccess
    from lazily_queue.client.fair import fair_budget, fair_window

    access = ClientAccess([]) if commit_target is None else ClientAccess(
        [], commit_target=commit_target)
    print(f"{flooders} flooder processes x 4 clients x 512 in flight, plus one greedy "
          f"client with 10,000 at once, for {seconds:g} s")
    print(f"lazily-queue: members serve at most {access.max_in_flight} requests per client "
          f"and {access.max_total_in_flight:,} in all (+{fair_budget(access)['reserve']} for "
          f"light clients), and propose {fair_window(access)['window']} at once "
          f"(+{fair_window(access)['reserve']}), "
          + (f"fewer while clients wait and commits take over {access.commit_target:g} s"
             if access.commit_target else "always (client_commit_target = 0)"))
    where = ("each flooder process starts at a member in turn and stays on it"
             if clients_at == "members" else "every client prefers the leader")
    linked = ", ".join(f"node {node} {count}" for node, count in sorted(
        out["flood_clients_at"].items()))
    print(f"clients: {where}; the flood's clients ended linked to {linked} (the probe "
          "prefers the leader)")
    print(f"leader before {out['leader_before']}, after {out['leader_after']}; seen during "
          f"the flood: {', '.join(out['leaders_seen'])} -> "
          f"{'kept' if out['leader_kept'] else 'NOT kept'}")
    _print_probe(out)
    print(f"flood: {out['flood_pushes_per_s']:,} committed pushes/s; at most "
          f"{out['max_member_in_flight']} requests in flight on a member")
    _print_cpu(out, "members")


def _print_cpu(out: dict[str, Any], cluster: str) -> None:
    print(f"CPU while flooding ({os.cpu_count()} cores here): the {cluster} "
          f"{out['flood_cluster_cores']} cores ({out['flood_cluster_us_per_op']} us per "
          f"acknowledged push), the flooders {out['flood_clients_cores']}", flush=True)


def _print_probe(out: dict[str, Any]) -> None:
    print(f"probe commit latency, 1 in flight: alone p50 {out['baseline_p50_ms']} ms, p99 "
          f"{out['baseline_p99_ms']} ms; under the flood p50 {out['flood_p50_ms']} ms "
          f"({out['flood_p50_ratio']}x alone), p99 {out['flood_p99_ms']} ms "
          f"({out['flood_samples']} samples)")
    if out.get("probe_cpu_wait_ms") is not None:
        print(f"the probe's process waited {out['probe_cpu_wait_ms']} ms for a CPU per time "
              "slice under the flood (the flooders run in a session of their own)")
    if out.get("members_wait_per_run") is not None:
        print(f"the members' event loops waited for a CPU {out['members_wait_per_run']} s per "
              f"second they ran under the flood, {out.get('members_wait_per_run_alone')} s "
              "alone (well over 0: the machine is short of CPUs, and every step of a commit "
              "waits for one)")


def _print_nats(out: dict[str, Any]) -> None:
    for note in out["notes"]:
        print(note)
    leaders = ", ".join(f"{stream} {out['leader_before'][stream]} -> "
                        f"{out['leader_after'][stream]}" for stream in out["leader_before"])
    print(f"stream leaders before -> after the flood: {leaders} -> "
          f"{'kept' if out['leader_kept'] else 'NOT kept'}")
    _print_probe(out)
    shared = out["shared"]
    print(f"probe on the flood's stream (one Raft group for both): under the flood p50 "
          f"{shared['flood_p50_ms']} ms ({shared['flood_p50_ratio']}x alone), p99 "
          f"{shared['flood_p99_ms']} ms ({shared['flood_samples']} samples)")
    print(f"flood: {out['flood_pushes_per_s']:,} acknowledged publishes/s "
          f"({out['flood_failed']:,} publishes failed)")
    _print_cpu(out, "servers")


def over_rounds(rounds: list[dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Each system's figures over several rounds: every figure (the probe's on the
    flood's stream too) is its median over the rounds the system ran in, the leaders count
    as kept only when kept in every one, and ``flood_p50_rounds`` lists each round's
    flood p50. A system that failed in every round keeps its error."""
    combined: dict[str, dict[str, Any]] = {}
    for key, (figures, count) in median_systems(rounds).items():
        if not count:
            combined[key] = figures
            continue
        runs = [systems[key] for systems in rounds
                if key in systems and "error" not in systems[key]]
        out = dict(figures, rounds=count)
        out["leader_kept"] = all(run["leader_kept"] for run in runs)
        out["flood_p50_rounds"] = [run["flood_p50_ms"] for run in runs]
        combined[key] = out
    return combined


def table(systems: dict[str, dict[str, Any]]) -> str:
    """A row per system that ran: the probe's p50 alone, its p50 (and multiple of alone)
    and p99 under the flood, the flood's acknowledged pushes/s, whether leaders held."""
    lines = [["system", "alone p50 (ms)", "flood p50 (ms, x alone)", "flood p99 (ms)",
              "flood acked/s", "leader kept", "cluster CPU (cores, us/push)"]]
    nats = systems.get("nats")
    if nats is not None and "shared" in nats:
        systems = dict(systems, nats_shared=dict(nats, **nats["shared"]))
    for key, title in SYSTEMS.items():
        out = systems.get(key)
        if out is None or "error" in out:
            continue
        lines.append([title, f"{out['baseline_p50_ms']:.2f}",
                      f"{out['flood_p50_ms']:.2f} ({out['flood_p50_ratio']}x)",
                      f"{out['flood_p99_ms']:.1f}", f"{out['flood_pushes_per_s']:,}",
                      "yes" if out["leader_kept"] else "no", _cpu_cell(out)])
    return markdown_table(lines, right=[1, 2, 3, 4, 6])


def _cpu_cell(out: dict[str, Any]) -> str:
    cores, per_push = out.get("flood_cluster_cores"), out.get("flood_cluster_us_per_op")
    return "-" if cores is None else f"{cores:.2f}, {per_push:.0f}"


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
                                            args.clients_at, args.commit_target)))
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
              "lazily-queue fsyncs before acknowledging")
    if args.json:
        print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
