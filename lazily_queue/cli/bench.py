"""``lazily-queue bench NAME [ARGS...]``: run ``benchmarks/NAME.py`` with this Python."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Any

#: The checkout this package runs from (benchmarks are not installed with the package).
CHECKOUT = Path(__file__).resolve().parents[2]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "bench",
        help="run a benchmark script from benchmarks/",
        description=(
            "Run benchmarks/NAME.py (found in --dir, ./benchmarks or the source checkout) "
            "with the current interpreter; ARGS are passed through (e.g. --json). Without "
            "NAME, list the benchmarks. The exit status is the script's."
        ),
    )
    parser.add_argument("name", nargs="?", help="benchmark name (file name without .py)")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the script")
    parser.add_argument("--dir", type=Path, help="the benchmarks directory")
    parser.set_defaults(handler=run)


def benchmarks_dir(explicit: Path | None = None) -> Path | None:
    candidates = [explicit] if explicit is not None else [
        Path.cwd() / "benchmarks", CHECKOUT / "benchmarks"]
    for path in candidates:
        if path is not None and path.is_dir():
            return path
    return None


#: What makes a file of the benchmarks directory a script to run (the others are the
#: modules the benchmarks import or start inside node processes).
MAIN_GUARD = 'if __name__ == "__main__":'


def available(directory: Path) -> list[str]:
    return sorted(p.stem for p in directory.glob("*.py")
                  if not p.name.startswith("_") and MAIN_GUARD in p.read_text())


def run(args: argparse.Namespace) -> int:
    directory = benchmarks_dir(args.dir)
    if directory is None:
        where = args.dir or "./benchmarks"
        print(f"error: no benchmarks directory at {where}; run from a source checkout or "
              "pass --dir", file=sys.stderr)
        return 2
    names = available(directory)
    if args.name is None:
        print(f"benchmarks in {directory}:")
        for name in names:
            print(f"  {name}")
        return 0
    name = args.name.removesuffix(".py")
    if name not in names:
        print(f"error: no benchmark {name!r} in {directory}; available: {', '.join(names)}",
              file=sys.stderr)
        return 2
    return subprocess.call([sys.executable, str(directory / f"{name}.py"), *args.args])
