"""``python -m simulator``: run seeds or replay a fixture; exit 1 on any failure.

Re-executes itself with ``PYTHONHASHSEED=0`` when it is not set (the simulation is only
deterministic with fixed string hashing).
"""

from __future__ import annotations

import argparse
import os
import sys

from .defects import UNDO, without
from .runner import default_jobs, load_fixture, main_seeds, report, save_fixture
from .scenario import generate
from .simulation import run


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m simulator", description=__doc__)
    p.add_argument("--seeds", type=int, default=200, help="how many seeds to run")
    p.add_argument("--start", type=int, default=0, help="the first seed")
    p.add_argument("--seed", type=int, help="run this one seed (and print its trace)")
    p.add_argument("--fixture", help="replay a saved scenario (JSON)")
    p.add_argument("--jobs", type=int, default=0, help="worker processes (default: CPUs)")
    p.add_argument("--twice", action="store_true",
                   help="run each seed twice and require identical traces")
    p.add_argument("--save", help="with --seed: save the scenario as a fixture here")
    p.add_argument("--without", action="append", default=[], metavar="FIX",
                   help=f"undo a fix for this run ({', '.join(sorted(UNDO))})")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if os.environ.get("PYTHONHASHSEED") != "0":
        env = dict(os.environ, PYTHONHASHSEED="0")
        argv = sys.argv[1:] if argv is None else argv
        os.execve(sys.executable, [sys.executable, "-m", "simulator", *argv], env)
    if args.seed is not None or args.fixture:
        if args.fixture:
            scenario, expect = load_fixture(args.fixture)
        else:
            scenario, expect = generate(args.seed), {"ok": True}
        with without(*args.without):
            outcome = run(scenario)
        if args.without:
            expect = {"ok": False}
        if args.twice:
            again = run(scenario)
            if again.trace_digest != outcome.trace_digest:
                print(f"NONDETERMINISTIC seed {scenario.seed}: {outcome.trace_digest} != "
                      f"{again.trace_digest}")
                return 1
        if args.save:
            save_fixture(args.save, outcome, scenario, f"seed {scenario.seed}")
        if outcome.ok != expect.get("ok", True):
            report(outcome, sys.stdout, args.fixture)
            return 1
        print("\n".join(outcome.trace_tail))
        verdict = "ok" if outcome.ok else f"FAIL (expected): {outcome.error}"
        print(f"seed {scenario.seed}: {verdict} in {outcome.seconds:.2f}s, trace "
              f"{outcome.trace_digest}, {outcome.stats}")
        return 0
    jobs = args.jobs or default_jobs()
    seeds = list(range(args.start, args.start + args.seeds))
    with without(*args.without):
        summary = main_seeds(seeds, jobs, progress=len(seeds) >= 500)
    print(summary.text())
    return 1 if summary.failed else 0


if __name__ == "__main__":
    sys.exit(main())
