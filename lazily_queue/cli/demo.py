"""``lazily-queue demo``: a 3-process cluster with a leader killed mid-run, verified.

``lazily-queue demo --local`` runs the single-process demo (producers and competing
workers on local cells) instead.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="run the 3-node failover demo (or --local: the single-process demo)",
        description=(
            "Start three `lazily-queue node` processes (over Unix sockets, TCP or WebRTC: "
            "--transport), run a producer "
            "and competing workers in each on a replicated work queue, SIGKILL the leader "
            "mid-run, restart it, and verify from the ledger that no acknowledged job was "
            "lost and no job's effect was applied twice. Exits 1 otherwise. With --local: "
            "producers and workers on local cells in one process."
        ),
    )
    parser.add_argument("--local", action="store_true", help="the single-process demo")
    parser.add_argument("--items", type=int, help="items per producer (cluster 400, local 2000)")
    parser.add_argument("--workers", type=int, help="workers per node (2) / in total (local 4)")
    parser.add_argument("--fail-rate", type=float, default=None,
                        help="share of deliveries that fail and are retried")
    parser.add_argument("--seed", type=int, default=7, help="failure injection seed")
    parser.add_argument("--no-progress", action="store_true", help="no live display")
    cluster = parser.add_argument_group("cluster demo")
    cluster.add_argument("--dir", type=Path, default=Path(".lazily-demo"),
                         help="working directory, emptied first (default .lazily-demo)")
    cluster.add_argument("--rate", type=float, default=120.0, help="pushes/s per producer")
    cluster.add_argument("--kill-at", type=float, default=0.3,
                         help="kill the leader at this acknowledged share (>= 1: never)")
    cluster.add_argument("--visibility-timeout", type=float, default=2.0,
                         help="lease length in seconds")
    cluster.add_argument("--timeout", type=float, default=55.0, help="give up after (s)")
    cluster.add_argument("--durability", choices=("fsync", "none"), default="fsync")
    cluster.add_argument("--transport", choices=("unix", "tcp", "webrtc"), default="unix",
                         help="how the nodes link: unix sockets (default), tcp on loopback, "
                              "or webrtc through a signaling process")
    local = parser.add_argument_group("local demo")
    local.add_argument("--producers", type=int, default=3, help="async producers (default 3)")
    local.add_argument("--capacity", type=int, default=64, help="QueueCell bound (default 64)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    for name in ("items", "workers", "producers", "capacity"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise SystemExit(f"error: --{name} must be >= 1")
    if args.fail_rate is not None and not 0 <= args.fail_rate < 0.5:  # nan too
        raise SystemExit("error: --fail-rate must be in [0, 0.5)")
    if args.local:
        return _local(args)
    try:
        from ..demo.cluster import ClusterDemoConfig, main
    except ImportError as exc:
        raise SystemExit(f"error: the cluster demo needs aiohttp ({exc}): pip install "
                         "-e '.[aiohttp]' in the lazily-queue clone, or run `lazily-queue "
                         "demo --local`") from None

    if not all(0 < value < math.inf for value in (args.rate, args.visibility_timeout,
                                                   args.timeout)):
        raise SystemExit("error: --rate, --visibility-timeout and --timeout must be finite "
                         "numbers > 0")
    if not args.kill_at >= 0:
        raise SystemExit("error: --kill-at must be a share >= 0 of the pushes (>= 1: never)")
    config = ClusterDemoConfig(
        directory=args.dir,
        items=args.items or 400,
        rate=args.rate,
        workers=args.workers or 2,
        fail_rate=0.02 if args.fail_rate is None else args.fail_rate,
        visibility_timeout=args.visibility_timeout,
        kill_at=args.kill_at,
        timeout=args.timeout,
        seed=args.seed,
        durability=args.durability,
        progress=not args.no_progress,
        transport=args.transport,
    )
    return main(config)


def _local(args: argparse.Namespace) -> int:
    from ..demo.local import DemoConfig, main

    config = DemoConfig(
        producers=args.producers,
        items=args.items or 2000,
        workers=args.workers or 4,
        capacity=args.capacity,
        fail_rate=0.05 if args.fail_rate is None else args.fail_rate,
        seed=args.seed,
        progress=not args.no_progress,
    )
    return main(config)
