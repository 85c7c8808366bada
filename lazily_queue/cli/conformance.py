"""``lazily-queue conformance PATH...``: replay queue-family fixtures and report.

Prints one line per fixture (every selected flavor replayed), then a summary line.
Exit status: 0 when every replay passed, 1 on any failure, 2 on a usage problem
(unknown backend, missing path, nothing to replay).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any, TextIO

from ..conformance import (
    FLAVORS,
    Backend,
    Fixture,
    FixtureError,
    ReplayResult,
    UnknownBackend,
    create_backend,
    discover,
    known_backends,
    replay,
)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "conformance",
        help="replay lazily-spec queue-family fixtures",
        description=(
            "Replay QueueCell/TopicCell/WorkQueueCell fixtures (kind 'Collection'). A PATH "
            "may be a fixture file or a directory searched recursively; other JSON files "
            "in a directory are ignored and counted."
        ),
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="fixture file or directory")
    parser.add_argument(
        "--backend",
        default="local",
        metavar="NAME",
        help=f"backend to replay on (default: local; known: {', '.join(known_backends())})",
    )
    parser.add_argument(
        "--url",
        default=None,
        metavar="URL",
        help="the broker a broker backend replays on (nats://HOST:PORT for --backend nats, "
        "redis://HOST:PORT/DB for --backend redis); fixtures are replayed on fresh names",
    )
    parser.add_argument(
        "--flavor",
        choices=(*FLAVORS, "all"),
        default="all",
        help="op flavor: the synchronous core, the awaitables, the core from another "
        "thread, or all (default)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    url = getattr(args, "url", None)
    try:
        backend = _backend(args.backend, url)
    except (UnknownBackend, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        found = discover(args.paths)
    except FixtureError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not found.fixtures:
        print(
            f"error: no queue-family fixtures under {' '.join(args.paths)} "
            f"({len(found.ignored)} other JSON files ignored)",
            file=sys.stderr,
        )
        return 2
    flavors = list(backend.flavors) if args.flavor == "all" else [args.flavor]
    results = asyncio.run(_replay_all(found.fixtures, args.backend, url, flavors))
    failed_fixtures = skipped_fixtures = 0
    for fixture, runs in zip(found.fixtures, results, strict=True):
        if any(not r.passed for r in runs):
            failed_fixtures += 1
        elif all(r.skipped for r in runs):
            skipped_fixtures += 1
        print(_fixture_line(fixture.name, runs), file=out)
    total = sum(len(runs) for runs in results)
    failed = sum(1 for runs in results for r in runs if not r.passed)
    skipped = sum(1 for runs in results for r in runs if r.skipped)
    passed_fixtures = len(found.fixtures) - failed_fixtures - skipped_fixtures
    print(
        f"{passed_fixtures} passed, {failed_fixtures} failed, {skipped_fixtures} skipped: "
        f"{len(found.fixtures)} fixtures x {len(flavors)} flavor(s) ({', '.join(flavors)}) "
        f"on backend {backend.name}, {total - failed - skipped}/{total} replays passed, "
        f"{skipped} skipped (listed with their reason); "
        f"{len(found.ignored)} JSON file(s) ignored (not queue-family)",
        file=out,
    )
    return 1 if failed else 0


def _backend(name: str, url: str | None) -> Backend:
    """A fresh backend; a broker backend is given ``url`` (required for it)."""
    backend = create_backend(name)
    wants_url = hasattr(backend, "url")
    if wants_url:
        if not url:
            raise ValueError(f"backend {name!r} needs --url (the broker to replay on)")
        configurable: Any = backend
        configurable.url = url
    elif url:
        raise ValueError(f"backend {name!r} takes no --url")
    return backend


async def _replay_all(
    fixtures: list[Fixture], backend: str, url: str | None, flavors: list[str]
) -> list[list[ReplayResult]]:
    """One list of results (one per flavor) per fixture, in fixture order."""
    return [
        [await replay(fixture, backend=_backend(backend, url), flavor=flavor)
         for flavor in flavors]
        for fixture in fixtures
    ]


def _fixture_line(name: str, runs: list[ReplayResult]) -> str:
    steps = runs[0].steps
    failures = [r for r in runs if not r.passed]
    if not failures and all(r.skipped for r in runs):
        return f"SKIP  {name}  ({steps} steps) {runs[0].skipped}"
    if not failures:
        flavors = " ".join(r.flavor for r in runs)
        return f"PASS  {name}  ({steps} steps; {flavors})"
    first = failures[0]
    assert first.failure is not None
    also = [r.flavor for r in failures[1:]]
    extra = f" (also fails: {', '.join(also)})" if also else ""
    return f"FAIL  {name}  ({steps} steps) [{first.flavor}] {first.failure.describe()}{extra}"
