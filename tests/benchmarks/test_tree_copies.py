"""``benchmarks/tree_copies.py``: the base revision's tree and this checkout's, side by
side, and the instruction totals of callgrind's dumps."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.append(str(ROOT))
from benchmarks.tree_copies import callgrind_totals, copy_here, export  # noqa: E402


def test_the_base_and_this_tree_hold_the_parts_asked_for(tmp_path: Path) -> None:
    base = export("HEAD", tmp_path, ("lazily_queue", "transports"), compiled=True)
    this = copy_here(tmp_path, ("lazily_queue", "transports"))
    assert (base, this) == (tmp_path / "tree-base", tmp_path / "tree-this")
    for tree in (base, this):
        assert sorted(p.name for p in tree.iterdir()) == ["lazily_queue", "transports"]
        assert (tree / "lazily_queue" / "node.py").is_file()
    assert list(base.rglob("__pycache__"))  # compiled where it lies
    assert not list(this.rglob("__pycache__")) and not list(this.rglob("*.egg-info"))


def test_the_totals_are_read_by_dump_number(tmp_path: Path) -> None:
    (tmp_path / "cg.7.1").write_text("events: Ir\nsummary: 120\n")
    (tmp_path / "cg.7.2").write_text("events: Ir\ntotals: 345\n")
    (tmp_path / "cg.8.1").write_text("summary: 9\n")
    assert callgrind_totals(tmp_path, "cg.7.*") == {1: 120, 2: 345}
    (tmp_path / "cg.7.3").write_text("events: Ir\n")
    with pytest.raises(SystemExit, match="no instruction total in"):
        callgrind_totals(tmp_path, "cg.7.*")
