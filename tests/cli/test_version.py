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


def test_a_reader_that_went_away_ends_the_command_quietly() -> None:
    """``lazily-queue ... | head``: the output's reader is gone; no traceback."""
    import os

    read, write = os.pipe()
    os.close(read)
    try:
        fixture = sorted((ROOT / "fixtures" / "collections").glob("*.json"))[0]
        done = subprocess.run([sys.executable, "-m", "lazily_queue", "conformance",
                               "--flavor", "sync", str(fixture)],
                              stdout=write, stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(write)
    assert done.returncode == 141 and done.stderr == ""
