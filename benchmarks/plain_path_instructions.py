"""Instructions per element of the plain paths (``plain_path.py``), this tree against a
base revision, counted by Valgrind's callgrind: deterministic where wall time on a
shared machine is not.

    python benchmarks/plain_path_instructions.py [--base REV] [--scale K] [--only A,B] [--json]

Each tree (this checkout's, uncommitted changes included, and ``--base``'s, default
``8f10d09``, exported with ``git archive``; both copied into one temporary directory and
compiled there) runs the workloads of ``plain_path.py`` — the same
script for both, importing the tree's ``lazily_queue`` first on ``PYTHONPATH`` — under
``valgrind --tool=callgrind`` with ``PYTHONHASHSEED=0`` and the garbage collector off.
The timer reads that bracket each workload's timed region are replaced by a marker
(``os.getppid``) on which callgrind dumps its counters, so a dump holds exactly one
timed region. Each workload runs once to warm up, then at ``K`` and ``2K`` units; the
difference of the two regions' instruction counts over the units added is the cost per
element, set-up and first-call costs cancelling out. Printed per figure: instructions
per element on the base and on this tree, and their ratio (this / base); ``--only``
measures the named figures alone.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
#: The parts of a tree measured: PYTHONPATH puts each tree's first, ROOT after them.
TREE = ("lazily_queue",)
sys.path.append(str(ROOT))
from benchmarks.tree_copies import callgrind_totals, copy_here, export  # noqa: E402

#: figure -> (plain_path function, units per call argument, the argument at scale 1).
FIGURES: dict[str, tuple[str, int, int]] = {
    "local_pair": ("local_pairs", 1, 1024),
    "replicated_apply": ("replicated_apply", 256, 2),
    "topic_pair": ("topic_pairs", 1, 1024),
    "topic_await": ("topic_awaited", 1, 1024),
    "replicated_topic": ("replicated_topic", 256, 2),
    "work_cycle": ("work_cycles", 1, 512),
    "work_await_push": ("work_await_pushes", 1, 512),
    "work_apply": ("work_apply", 256, 2),
}


def child(scale: int, only: list[str]) -> None:
    """Run the workloads ``only`` names under callgrind (``--child``); print which dumps
    hold the measured regions, as one JSON line."""
    sys.path.insert(0, str(HERE))
    import plain_path

    markers = 0

    def marker() -> int:
        nonlocal markers
        markers += 1
        os.getppid()  # callgrind dumps here (--dump-before=getppid)
        return 0

    plain_path.time = types.SimpleNamespace(perf_counter_ns=marker)  # type: ignore[attr-defined]
    dumps: dict[str, Any] = {}
    for name, (function, units, base) in FIGURES.items():
        if name not in only:
            continue
        run = getattr(plain_path, function)
        run(base)  # warm-up: first calls, caches
        measured = []
        for arg in (base * scale, 2 * base * scale):
            gc.collect()
            gc.disable()
            try:
                run(arg)
            finally:
                gc.enable()
            measured.append(markers)  # the region ended at this marker: its dump number
        dumps[name] = {"dumps": measured, "units": [base * scale * units,
                                                    2 * base * scale * units]}
    import lazily_queue

    print(json.dumps({"lazily_queue": lazily_queue.__file__, "figures": dumps}))


def measure(tree: Path, scale: int, work: Path, only: list[str]) -> dict[str, float]:
    """Instructions per element of each figure with ``tree``'s ``lazily_queue``."""
    out_dir = Path(tempfile.mkdtemp(dir=work))
    env = dict(os.environ, PYTHONPATH=str(tree), PYTHONHASHSEED="0")
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--dump-before=getppid", "--dump-instr=no",
         "--dump-line=no", f"--callgrind-out-file={out_dir}/cg.%p",
         sys.executable, str(Path(__file__).resolve()), "--child", "--scale", str(scale),
         "--only", ",".join(only)],
        env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the run on {tree} failed:\n{done.stdout[-3000:]}\n"
                         f"{done.stderr[-3000:]}")
    pid_match = re.search(r"==(\d+)== Callgrind", done.stderr)
    if pid_match is None:
        raise SystemExit(f"no callgrind output from the run on {tree}:\n{done.stderr[-2000:]}")
    totals = callgrind_totals(out_dir, f"cg.{pid_match.group(1)}.*")
    report = json.loads(done.stdout.strip().splitlines()[-1])
    if not Path(report["lazily_queue"]).resolve().is_relative_to(tree.resolve()):
        raise SystemExit(f"the run on {tree} imported {report['lazily_queue']}")
    per_element: dict[str, float] = {}
    for name, spec in report["figures"].items():
        small, large = (totals[n] for n in spec["dumps"])
        per_element[name] = (large - small) / (spec["units"][1] - spec["units"][0])
    return per_element


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="8f10d09", help="the revision to compare with")
    parser.add_argument("--scale", type=int, default=4,
                        help="workload size (units added between the two measured runs)")
    parser.add_argument("--only", default=",".join(FIGURES),
                        help=f"the figures to measure, comma-separated ({', '.join(FIGURES)})")
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    only = [name for name in args.only.split(",") if name]
    unknown = sorted(set(only) - set(FIGURES))
    if unknown or not only:
        parser.error(f"--only takes figures among {', '.join(FIGURES)}, not "
                     f"{', '.join(unknown) or 'none'}")
    if args.child:
        child(args.scale, only)
        return 0
    if shutil.which("valgrind") is None:
        print("error: valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="plain-path-instructions-"))
    try:
        base = measure(export(args.base, work, TREE, compiled=True), args.scale, work, only)
        this = measure(copy_here(work, TREE, compiled=True), args.scale, work, only)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"instructions per element, base {args.base} vs this tree (scale {args.scale})")
    print(f"{'figure':18} {'base':>10} {'this':>10} {'ratio':>7}")
    rows: dict[str, Any] = {}
    for name in only:
        ratio = this[name] / base[name]
        rows[name] = {"base": round(base[name], 1), "this": round(this[name], 1),
                      "ratio": round(ratio, 4)}
        print(f"{name:18} {base[name]:10.1f} {this[name]:10.1f} {ratio:7.3f}")
    if args.json:
        print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
