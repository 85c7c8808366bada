"""``lazily-queue demo``: producers and competing workers in one process, verified."""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="run the local producer/worker demo",
        description=(
            "Producers (async tasks and a thread) and competing workers on a bounded "
            "QueueCell, then on a WorkQueueCell with failing and abandoned deliveries. "
            "Exits 1 if any item is lost or processed twice."
        ),
    )
    parser.add_argument("--producers", type=int, default=3, help="async producers (default 3)")
    parser.add_argument("--items", type=int, default=2000, help="items per producer")
    parser.add_argument("--workers", type=int, default=4, help="competing workers (default 4)")
    parser.add_argument("--capacity", type=int, default=64, help="QueueCell bound (default 64)")
    parser.add_argument(
        "--fail-rate", type=float, default=0.05, help="work stage: nacked (and abandoned) share"
    )
    parser.add_argument("--seed", type=int, default=7, help="failure injection seed")
    parser.add_argument("--no-progress", action="store_true", help="print only the summary")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..demo.local import DemoConfig, main

    for name in ("producers", "items", "workers", "capacity"):
        if getattr(args, name) < 1:
            raise SystemExit(f"error: --{name} must be >= 1")
    if not 0 <= args.fail_rate < 0.5:
        raise SystemExit("error: --fail-rate must be in [0, 0.5)")
    config = DemoConfig(
        producers=args.producers,
        items=args.items,
        workers=args.workers,
        capacity=args.capacity,
        fail_rate=args.fail_rate,
        seed=args.seed,
        progress=not args.no_progress,
    )
    return main(config)
