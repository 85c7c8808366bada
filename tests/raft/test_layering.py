"""raft/ is consensus only: it never imports the replicated state machine or cells."""

from __future__ import annotations

import ast
from pathlib import Path

import lazily_queue.raft

RAFT = Path(lazily_queue.raft.__path__[0])
FORBIDDEN = ("replicated", "cells", "storage", "node", "routing", "maintenance", "membership")


def _imports(path: Path) -> list[str]:
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            found += [base] + [f"{base}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
    return found


def test_raft_imports_nothing_above_consensus() -> None:
    offending = []
    for path in sorted(RAFT.glob("*.py")):
        for name in _imports(path):
            parts = name.replace("lazily_queue.", "..").lstrip(".").split(".")
            above = name.startswith("..") or name.startswith("lazily_queue.")
            if above and parts[0] in FORBIDDEN:
                offending.append(f"{path.name}: {name}")
    assert offending == []


def test_pysyncobj_failure_codes_stay_inside_the_engine() -> None:
    users = sorted(p.name for p in RAFT.parent.rglob("*.py") if "FAIL_REASON" in p.read_text())
    assert users == ["engine.py", "outcome.py"]
