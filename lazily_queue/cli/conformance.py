"""``lazily-queue conformance PATH...``: replay queue-family fixtures and report.

Prints one line per fixture (every selected flavor replayed), then a summary line.
A fixture with cluster ops (``kill_leader``, ``partition``, ...) that ``--backend``
cannot perform replays on ``--cluster-backend`` (default ``raft3``: a three-node
cluster in this process), and its line says so; with ``--cluster-backend none`` it is
listed as skipped, with the command that runs it. A fixture that needs a capability the
backend lacks (:attr:`~lazily_queue.conformance.Backend.lacks`: a broker's leases on its
own clock, say) is listed as skipped with the reason. ``--url`` names the broker of the
``nats`` and ``redis`` backends. Exit status: 0 when no replay
failed (skips are not failures), 1 on any failure, 2 on a usage problem (unknown
backend, missing path, nothing to replay).
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import sys
from dataclasses import dataclass
from typing import Any, TextIO

from ..conformance import (
    FLAVORS,
    Backend,
    Fixture,
    FixtureError,
    ReplayResult,
    UnknownBackend,
    cluster_ops_of,
    create_backend,
    discover,
    known_backends,
    replay,
)
from ..conformance.engine import skip_reason
from ..errors import LazilyQueueError

DEFAULT_CLUSTER_BACKEND = "raft3"


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
        "--cluster-backend",
        default=DEFAULT_CLUSTER_BACKEND,
        metavar="NAME",
        help="where fixtures with cluster ops (kill_leader, partition, ...) replay when "
        f"--backend cannot run them (default: {DEFAULT_CLUSTER_BACKEND}, an in-process "
        "cluster; 'none' lists them as skipped)",
    )
    parser.add_argument(
        "--flavor",
        choices=(*FLAVORS, "all"),
        default="all",
        help="op flavor: the synchronous core, the awaitables, the core from another "
        "thread, or all (default)",
    )
    parser.set_defaults(handler=run)


@dataclass
class Plan:
    """Where one fixture replays: a backend and its flavors, or why it is skipped."""

    fixture: Fixture
    backend: str
    flavors: list[str]
    cluster_ops: frozenset[str] = frozenset()
    skipped: str | None = None


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    cluster_name = getattr(args, "cluster_backend", DEFAULT_CLUSTER_BACKEND)
    url = getattr(args, "url", None)
    try:
        backend = _backend(args.backend, url)
        cluster = None if cluster_name == "none" else create_backend(cluster_name)
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
    if url:
        try:
            asyncio.run(_reach(backend))
        except (ValueError, LazilyQueueError, OSError) as exc:
            print(f"error: --url {url}: {exc}; nothing was replayed", file=sys.stderr)
            return 1 if isinstance(exc, ConnectionError) else 2
    flavors = list(backend.flavors) if args.flavor == "all" else [args.flavor]
    plans = [_plan(f, backend, flavors, cluster, args.flavor) for f in found.fixtures]
    results = asyncio.run(_replay_all(plans, backend.name, url))
    failed_fixtures = skipped = elsewhere = 0
    for plan, runs in zip(plans, results, strict=True):
        if plan.skipped is not None:
            skipped += 1
            print(_skipped_line(plan), file=out)
            continue
        if any(not r.passed for r in runs):
            failed_fixtures += 1
        if plan.backend != args.backend:
            elsewhere += 1
        print(_fixture_line(plan, runs, args.backend), file=out)
    total = sum(len(runs) for runs in results)
    failed = sum(1 for runs in results for r in runs if not r.passed)
    replayed = len(found.fixtures) - skipped
    on = f"on backend {backend.name}"
    if elsewhere:
        on += f" ({elsewhere} with cluster ops on {cluster_name})"
    print(
        f"{replayed - failed_fixtures} passed, {failed_fixtures} failed"
        f"{f', {skipped} skipped' if skipped else ''}: "
        f"{len(found.fixtures)} fixtures x {len(flavors)} flavor(s) ({', '.join(flavors)}) "
        f"{on}, {total - failed}/{total} replays passed; "
        f"{len(found.ignored)} JSON file(s) ignored (not queue-family)",
        file=out,
    )
    return 1 if failed else 0


def _backend(name: str, url: str | None) -> Backend:
    """A fresh backend; a broker backend is given ``url`` (which it requires)."""
    backend = create_backend(name)
    if hasattr(backend, "url"):
        if not url:
            raise ValueError(f"backend {name!r} needs --url (the broker to replay on)")
        configurable: Any = backend
        configurable.url = url
    elif url:
        raise ValueError(f"backend {name!r} takes no --url")
    return backend


async def _reach(backend: Backend) -> None:
    """Connect to a broker backend's broker once and close: an address it cannot use or a
    broker that does not answer fails here, once, rather than in every replay."""
    await backend.start()
    await backend.stop()


def _plan(fixture: Fixture, backend: Backend, flavors: list[str], cluster: Backend | None,
          flavor: str) -> Plan:
    plan = _route(fixture, backend, flavors, cluster, flavor)
    where = backend if plan.backend == backend.name else cluster
    reason = None if where is None else skip_reason(where, fixture.document)
    if plan.skipped is None and reason is not None:
        return Plan(fixture, plan.backend, [], plan.cluster_ops, reason)
    return plan


def _route(fixture: Fixture, backend: Backend, flavors: list[str], cluster: Backend | None,
           flavor: str) -> Plan:
    needed = cluster_ops_of(fixture)
    if needed <= backend.cluster_ops:
        return Plan(fixture, backend.name, flavors)
    names = ", ".join(sorted(needed))
    rerun = f"lazily-queue conformance {shlex.quote(str(fixture.path or fixture.name))} " \
            f"--backend {DEFAULT_CLUSTER_BACKEND}"
    if cluster is None or not needed <= cluster.cluster_ops:
        where = "no cluster backend (--cluster-backend none)" if cluster is None else \
            f"--cluster-backend {cluster.name} cannot run them"
        return Plan(fixture, backend.name, [], needed,
                    f"needs cluster ops ({names}) and {where}; run: {rerun}")
    chosen = list(cluster.flavors) if flavor == "all" else \
        [f for f in cluster.flavors if f == flavor]
    if not chosen:
        return Plan(fixture, cluster.name, [], needed,
                    f"needs cluster ops ({names}) and {cluster.name} has no {flavor!r} "
                    f"flavor; run: {rerun}")
    return Plan(fixture, cluster.name, chosen, needed)


async def _replay_all(
    plans: list[Plan], main: str, url: str | None
) -> list[list[ReplayResult]]:
    """One list of results (one per flavor) per fixture, in fixture order; each replay
    on a fresh backend (a broker backend given ``url``)."""
    return [
        [await replay(plan.fixture, flavor=flavor,
                      backend=_backend(main, url) if plan.backend == main else plan.backend)
         for flavor in plan.flavors]
        for plan in plans
    ]


def _skipped_line(plan: Plan) -> str:
    return f"SKIP  {plan.fixture.name}  {plan.skipped}"


def _fixture_line(plan: Plan, runs: list[ReplayResult], backend: str) -> str:
    steps = runs[0].steps
    where = ""
    if plan.backend != backend:
        where = f" on {plan.backend}, for {', '.join(sorted(plan.cluster_ops))}"
    failures = [r for r in runs if not r.passed]
    if not failures:
        flavors = " ".join(r.flavor for r in runs)
        return f"PASS  {plan.fixture.name}  ({steps} steps; {flavors}{where})"
    first = failures[0]
    assert first.failure is not None
    also = [r.flavor for r in failures[1:]]
    extra = f" (also fails: {', '.join(also)})" if also else ""
    return (f"FAIL  {plan.fixture.name}  ({steps} steps{where}) [{first.flavor}] "
            f"{first.failure.describe()}{extra}")
