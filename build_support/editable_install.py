"""Editable installs that static analysers can follow.

setuptools installs a project whose packages sit in two roots (``lazily_queue`` at the
top, ``lazily_transports`` under ``transports/``) in editable mode through an import
hook, which type checkers cannot follow: mypy in a user's project reports "Cannot find
implementation or library stub for module named 'lazily_queue'". This command writes a
plain ``.pth`` file naming each root instead, which mypy, pyright and IDEs read, and
which keeps the install live (new modules appear without reinstalling).
``--config-settings editable_mode=strict`` still selects setuptools' strict mode.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from setuptools.command.editable_wheel import editable_wheel


class EditableWheel(editable_wheel):  # type: ignore[misc]
    """``editable_wheel`` with a ``.pth`` of the package roots (see the module docstring)."""

    def _select_strategy(self, name: str, tag: str, build_lib: Any) -> Any:
        if str(self.mode or "").lower() == "strict":
            return super()._select_strategy(name, tag, build_lib)
        return _RootsPth(name, package_roots(self.distribution, Path(self.project_dir)))


def package_roots(distribution: Any, project_dir: Path) -> list[Path]:
    """The directories whose addition to ``sys.path`` makes every package importable."""
    package_dir: dict[str, str] = distribution.package_dir or {}
    roots: list[Path] = []
    for package in distribution.packages or []:
        if "." in package:
            continue
        folder = package_dir.get(package) or os.path.join(package_dir.get("", "."), package)
        root = (project_dir / folder).resolve().parent
        if root not in roots:
            roots.append(root)
    return roots


class _RootsPth:
    """The strategy setuptools calls: one ``.pth`` line per root."""

    def __init__(self, name: str, roots: list[Path]) -> None:
        self.name = name
        self.roots = roots

    def __call__(self, wheel: Any, files: list[str], mapping: dict[str, str]) -> None:
        lines = "".join(f"{root}\n" for root in self.roots)
        wheel.writestr(f"__editable__.{self.name}.pth", lines.encode())

    def __enter__(self) -> _RootsPth:
        return self

    def __exit__(self, *exc: object) -> None:
        return None
