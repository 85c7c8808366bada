"""The package loads each public name's module on first use: ``__all__``, the lazy table
and the names mypy sees (the ``TYPE_CHECKING`` imports) must agree, and every name must
resolve to the object its module defines."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import lazily_queue

SOURCE = Path(lazily_queue.__file__)


def _type_checking_names() -> set[str]:
    tree = ast.parse(SOURCE.read_text())
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for stmt in node.body:
                if isinstance(stmt, ast.ImportFrom):
                    names.update(alias.asname or alias.name for alias in stmt.names)
                elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                    names.add(stmt.target.id)
    return names


def test_all_the_lazy_table_and_the_typed_names_agree() -> None:
    public = set(lazily_queue.__all__)
    assert set(lazily_queue._LAZY) | {"__version__"} == public
    assert _type_checking_names() == public


def test_every_name_is_its_modules_object() -> None:
    for name, module in lazily_queue._LAZY.items():
        home = importlib.import_module(f"lazily_queue.{module}")
        assert getattr(lazily_queue, name) is getattr(home, name), name
    assert isinstance(lazily_queue.__version__, str)


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        lazily_queue.NoSuchName  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchName" in str(exc)
    else:
        raise AssertionError("an unknown name resolved")


def test_importing_the_package_loads_no_cell_node_or_client() -> None:
    code = ("import json, sys, lazily_queue; print(json.dumps(sorted(m for m in sys.modules "
            "if m.startswith('lazily_queue.'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    loaded = json.loads(out)
    for heavy in ("lazily_queue.node", "lazily_queue.cells", "lazily_queue.client"):
        assert heavy not in loaded, loaded
