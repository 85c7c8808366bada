"""``lazily-queue --version`` and ``lazily_queue.__version__`` name the installed version."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

import lazily_queue

ROOT = Path(__file__).resolve().parents[2]


def test_the_version_comes_from_the_package_metadata() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert lazily_queue.__version__ == version("lazily-queue") == declared


def test_the_command_line_prints_it() -> None:
    out = subprocess.run([sys.executable, "-m", "lazily_queue", "--version"],
                         capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == f"lazily-queue {lazily_queue.__version__}"
