"""A tmpfs mounted for one test (a disk the test can fill, or a read-only one)."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def mounted_tmpfs(mount: Path, options: str) -> Iterator[Path]:
    """An empty tmpfs at ``mount`` with mount ``options`` (such as ``size=4m`` or
    ``ro,size=1m``), unmounted afterwards; skips the test where mounting is not allowed
    (it needs root, as CI runs)."""
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs ({options}) here ({done.stderr.strip()}); CI "
                    "runs as root")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(directory: Path) -> Path:
    """Write a new file in ``directory`` until its file system is full; returns it."""
    filler = directory / f"filler-{uuid.uuid4().hex}"
    with open(filler, "wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError:
            pass
    return filler
