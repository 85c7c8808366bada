"""Plant the defects that would break a guarantee, one at a time, and show the suite
catches each (``make mutate``).

The defects are listed in ``tests/mutations/`` (one module per part of the code). Each
mutation replaces one exact piece of source (it must occur exactly once), runs the
tests that guard it, expects them to fail, and puts the file back. The tree's tracked
files must be clean before it starts, so a planted defect can never be left behind
unnoticed. Exit status 0 when every mutation was caught, 1 when one survived.

    python tests/mutate.py [--list] [NAME ...]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: ``tests`` is then not importable
    sys.path.insert(0, str(ROOT))

from tests.mutations import MUTATIONS, Mutation  # noqa: E402

__all__ = ["MUTATIONS", "ROOT", "Mutation", "main"]


def _run_tests(tests: tuple[str, ...]) -> tuple[bool, float]:
    env = dict(os.environ, PYTHONHASHSEED="0")
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests],
        cwd=ROOT, env=env, capture_output=True, text=True)
    return done.returncode != 0, time.perf_counter() - start


def _apply(m: Mutation) -> str:
    path = ROOT / m.path
    original = path.read_text()
    count = original.count(m.old)
    if count != 1:
        raise SystemExit(f"{m.name}: the text to mutate occurs {count} times in {m.path}; "
                         "update its entry in tests/mutations/ to the current source")
    path.write_text(original.replace(m.old, m.new))
    return original


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="only these mutations")
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTATIONS if not args.names or m.name in args.names]
    if args.list:
        for m in chosen:
            print(f"{m.name:28} {m.path}: {m.guards}")
        return 0
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                           cwd=ROOT, capture_output=True, text=True).stdout.strip()
    if dirty:
        print("error: commit or stash your changes first; mutate.py edits tracked files",
              file=sys.stderr)
        return 2
    survived = []
    for m in chosen:
        original = _apply(m)
        try:
            caught, seconds = _run_tests(m.tests)
        finally:
            (ROOT / m.path).write_text(original)
        verdict = "caught" if caught else "SURVIVED"
        print(f"{m.name:28} {verdict:9} {seconds:6.1f}s  {' '.join(m.tests)}", flush=True)
        if not caught:
            survived.append(m.name)
    print(f"{len(chosen) - len(survived)} of {len(chosen)} planted defects caught"
          + (f"; survived: {', '.join(survived)}" if survived else ""))
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
