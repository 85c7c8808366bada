"""lazily-queue against the real alternatives: the same workloads, one run, one table.

    python benchmarks/peers.py [--quick] [--count N] [--samples S] [--only SYSTEMS]
                               [--latency] [--rounds R] [--json]
    lazily-queue bench peers ...

Workloads (100-byte messages, N per phase): produce with 256 pushes in flight; end to end
with one consumer while 256 push; a work queue with 256 pushing and 8 workers claiming
and acking; fan-out to 4 durable subscribers; push->acknowledgement latency with one push
in flight (3 members, then one member); one member's serial claim+ack and pop rates.

Systems: lazily-queue (3 ``lazily-queue node`` processes over Unix sockets, fsync before
every acknowledgement; one node process for the one-member rows), NATS JetStream R3
(3 ``nats-server -js``, file storage), Redis Streams (``redis-server``, AOF
``appendfsync always``), RabbitMQ (one ``rabbitmq-server`` node, quorum queues, publisher
confirms) and persist-queue ``SQLiteAckQueue`` (SQLite WAL, ``synchronous=FULL``;
one-member rows). Servers run on free loopback ports in temporary directories and are
always stopped. A peer that is not installed is skipped with a line saying how to
install it. ``--rounds R`` runs every system R times, taking turns, and reports each
figure's median and each ratio's median over the rounds (each ratio taken within one
round). Before each system runs, the disk is synced and left to settle for
:data:`SETTLE` seconds, so that no system's fsyncs wait behind what the one before it
left to write back. With ``--json`` the last line is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.peers_common import (  # noqa: E402
    ROWS,
    fdatasync_p50_ms,
    markdown_table,
    median_systems,
    missing,
    reap,
)

#: Seconds between ``sync`` and the next system's start.
SETTLE = 1.0


def _driver(name: str) -> Callable[[Path, int, int, bool], Awaitable[dict[str, Any]]]:
    if name == "lazily":
        from benchmarks import peers_lazily
        return peers_lazily.run
    if name == "nats":
        from benchmarks import peers_nats
        return peers_nats.run
    if name == "redis":
        from benchmarks import peers_redis
        return peers_redis.run
    if name == "rabbitmq":
        from benchmarks import peers_rabbitmq
        return peers_rabbitmq.run
    from benchmarks import peers_persist
    return peers_persist.run


#: (key, column title, why it cannot run or None)
SYSTEMS: dict[str, tuple[str, Callable[[], str | None]]] = {
    "lazily": ("lazily-queue", lambda: None),
    "nats": ("NATS JetStream R3", lambda: missing("nats-server", "nats", "nats-py")),
    "redis": ("Redis Streams (1 node)", lambda: missing("redis-server", "redis", "redis")),
    "rabbitmq": ("RabbitMQ quorum queue (1 node)",
                 lambda: missing("rabbitmq-server", "aiormq", "aiormq")),
    "persist": ("persist-queue", lambda: missing(None, "persistqueue", "persist-queue")),
}


def _cell(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float) and value < 100:
        return f"{value:.3f}".rstrip("0").rstrip(".") if value < 10 else f"{value:.1f}"
    return f"{round(value):,}"


def _times(ratio: float) -> str:
    return f"{ratio:.2f}x" if ratio >= 0.1 else f"{ratio:.3f}x"


def ratios(results: dict[str, dict[str, Any]]) -> dict[str, dict[str, float]]:
    """lazily-queue's figure divided by each peer's, per row both have."""
    ours = results.get("lazily", {})
    out: dict[str, dict[str, float]] = {}
    for name, figures in results.items():
        if name == "lazily":
            continue
        out[name] = {row.key: round(ours[row.key] / figures[row.key], 3) for row in ROWS
                     if row.compared and isinstance(ours.get(row.key), int | float)
                     and isinstance(figures.get(row.key), int | float) and figures[row.key]}
    return out


def table(results: dict[str, dict[str, Any]], ratio: dict[str, dict[str, float]]) -> str:
    ran = [name for name in SYSTEMS if name in results and "error" not in results[name]]
    peers = [name for name in ran if name != "lazily" and "lazily" in ran]
    head = ["figure", "better", *(SYSTEMS[n][0] for n in ran),
            *(f"lazily/{SYSTEMS[n][0].split()[0]}" for n in peers)]
    lines = [head]
    for row in ROWS:
        if not any(row.key in results[n] for n in ran):
            continue
        better = "-" if not row.compared else "higher" if row.higher_is_better else "lower"
        lines.append([f"{row.label} ({row.unit})", better,
                      *(_cell(results[n].get(row.key)) for n in ran),
                      *(_times(ratio[n][row.key]) if row.key in ratio.get(n, {}) else "—"
                        for n in peers)])
    return markdown_table(lines)


async def _round(args: argparse.Namespace, chosen: list[str], root: Path,
                 notes: list[str]) -> dict[str, dict[str, Any]]:
    """Every system in ``chosen`` once: its figures, or ``{"error": ...}``."""
    results: dict[str, dict[str, Any]] = {}
    for name in chosen:
        title = SYSTEMS[name][0]
        # What the previous system left for the disk to write back is written now, not
        # during this one's fsyncs.
        await asyncio.to_thread(os.sync)
        await asyncio.sleep(SETTLE)
        started = time.monotonic()
        disk_before = fdatasync_p50_ms(root)
        try:
            figures = await _driver(name)(root / name, args.count, args.samples,
                                          args.latency)
            figures["fdatasync_before_ms"] = disk_before
            figures["fdatasync_after_ms"] = fdatasync_p50_ms(root)
        except Exception as exc:
            cause = " | ".join(str(exc).split("\n"))
            results[name] = {"error": f"{type(exc).__name__}: {cause}"}
            print(f"{title}: failed: {results[name]['error']}", flush=True)
            continue
        finally:
            shutil.rmtree(root / name, ignore_errors=True)  # the next round starts afresh
        for note in figures.pop("notes", []):
            if note not in notes:
                notes.append(note)
        results[name] = figures
        shown = ", ".join(f"{k}={v}" for k, v in figures.items())
        print(f"{title} ({time.monotonic() - started:.0f}s): {shown}", flush=True)
    return results


def over_rounds(rounds: list[dict[str, dict[str, Any]]]
                ) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, float]]]:
    """The figures and ratios of several rounds: each system's figures are their medians
    over the rounds it ran in (an error when it ran in none), and each ratio is the
    median of the ratios taken within each round."""
    results = {name: figures for name, (figures, _) in median_systems(rounds).items()}
    each = [ratios({n: f for n, f in one.items() if "error" not in f}) for one in rounds]
    ratio: dict[str, dict[str, float]] = {}
    for peer in dict.fromkeys(p for r in each for p in r):
        keys = dict.fromkeys(k for r in each for k in r.get(peer, {}))
        ratio[peer] = {key: round(statistics.median(
            r[peer][key] for r in each if key in r.get(peer, {})), 3) for key in keys}
    return results, ratio


async def main_async(args: argparse.Namespace, chosen: list[str]) -> dict[str, Any]:
    skipped: dict[str, str] = {}
    notes: list[str] = []
    print(f"{args.count:,} messages of 100 B per phase, {args.samples:,} samples for the "
          "1-in-flight and serial rows", flush=True)
    for name in chosen:
        why = SYSTEMS[name][1]()
        if why is not None:
            skipped[name] = why
            print(f"{SYSTEMS[name][0]}: skipped ({why})", flush=True)
    running = [name for name in chosen if name not in skipped]
    rounds: list[dict[str, dict[str, Any]]] = []
    root = Path(tempfile.mkdtemp(prefix="lazily-peers-"))
    try:
        for number in range(1, args.rounds + 1):
            if args.rounds > 1:
                print(f"-- round {number} of {args.rounds}", flush=True)
            rounds.append(await _round(args, running, root, notes))
    finally:
        reap()
        shutil.rmtree(root, ignore_errors=True)
    results, ratio = over_rounds(rounds)
    ok = {n: f for n, f in results.items() if "error" not in f}
    print()
    print(table(ok, ratio))
    print()
    print("ratio = lazily-queue / peer; 'better' says which way is better for each row")
    if args.rounds > 1:
        print(f"- {args.rounds} rounds, the systems taking turns: each figure is its median "
              "over the rounds, each ratio the median of the ratios within each round")
    print("- one host, 100-byte messages; the peers' clients (nats-py, redis-py asyncio, "
          "aiormq; persist-queue in a thread) run in this process, lazily-queue's workload "
          "inside its leader's process")
    print("- the fsync-bound rows move with the disk (other load on the machine moves it): "
          "its fdatasync p50 of a 100 B append is in the context rows")
    for note in notes:
        print(f"- {note}")
    return {"count": args.count, "samples": args.samples, "rounds": args.rounds,
            **({"each_round": rounds} if args.rounds > 1 else {}),
            "systems": results, "skipped": skipped, "ratios": ratio, "notes": notes,
            "rows": {row.key: {"label": row.label, "unit": row.unit,
                               "higher_is_better": row.higher_is_better} for row in ROWS}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="2,000 messages, 200 samples")
    parser.add_argument("--count", type=int, help="messages per phase (default 20,000)")
    parser.add_argument("--samples", type=int,
                        help="1-in-flight and serial operations (default 1,000)")
    parser.add_argument("--only", help=f"comma-separated subset of {','.join(SYSTEMS)}")
    parser.add_argument("--latency", action="store_true",
                        help="only the 1-in-flight latency rows (and the disk context)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="run every system this many times, taking turns, and report "
                             "medians (default 1)")
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    args = parser.parse_args()
    args.count = args.count or (2000 if args.quick else 20000)
    args.samples = args.samples or (200 if args.quick else 1000)
    if args.count < 1 or args.samples < 1 or args.rounds < 1:
        parser.error("--count, --samples and --rounds must be at least 1")
    chosen = [s.strip() for s in args.only.split(",")] if args.only else list(SYSTEMS)
    unknown = [s for s in chosen if s not in SYSTEMS]
    if unknown:
        parser.error(f"unknown system(s) {', '.join(unknown)}; choose from {', '.join(SYSTEMS)}")
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    task = loop.create_task(main_async(args, chosen))
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, task.cancel)
    try:
        results = loop.run_until_complete(task)
    except asyncio.CancelledError:
        print("interrupted; every server was stopped", file=sys.stderr)
        return 130
    finally:
        reap()
        loop.close()
    if args.json:
        print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
