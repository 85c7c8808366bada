"""The two trees a benchmark comparing revisions measures, side by side in one work
directory: a base revision's, exported with ``git archive``, and this checkout's as it
is (uncommitted changes too), so both are measured from alike places; and the
instruction totals callgrind dumped while measuring them."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def export(rev: str, work: Path, parts: Sequence[str], *, compiled: bool = False) -> Path:
    """``parts`` (top-level folders of this repository) as of ``rev``, exported into
    ``work/tree-base``; byte-compiled there when ``compiled``."""
    target = work / "tree-base"
    target.mkdir()
    archive = subprocess.run(["git", "archive", rev, *parts], cwd=ROOT,
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return _compile(target) if compiled else target


def copy_here(work: Path, parts: Sequence[str], *, compiled: bool = False) -> Path:
    """``parts`` of this checkout as they are, copied into ``work/tree-this`` (without
    byte code or build metadata); byte-compiled there when ``compiled``."""
    target = work / "tree-this"
    for part in parts:
        shutil.copytree(ROOT / part, target / part,
                        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    return _compile(target) if compiled else target


def _compile(target: Path) -> Path:
    # compiled here, not under callgrind: an uncompiled tree (or PYTHONDONTWRITEBYTECODE)
    # would compile every imported module inside the measured process, at callgrind's pace
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(target)], check=True,
                   stdout=subprocess.DEVNULL)
    return target


def callgrind_totals(out_dir: Path, pattern: str) -> dict[int, int]:
    """The instruction total of each callgrind dump in ``out_dir`` whose file name
    matches ``pattern`` (a glob), by dump number (the name's last part)."""
    found: dict[int, int] = {}
    for path in out_dir.glob(pattern):
        match = re.search(r"^(?:summary|totals): (\d+)", path.read_text(), re.M)
        if match is None:
            raise SystemExit(f"no instruction total in {path}")
        found[int(path.name.rsplit(".", 1)[1])] = int(match.group(1))
    return found
