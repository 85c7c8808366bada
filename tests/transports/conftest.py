"""Fixtures for the transports tests."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from transport_helpers import address_for


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A short temporary directory (Unix socket paths are limited to 107 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="lq-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(params=["memory", "unix", "tcp", "ws"])
def address(request: pytest.FixtureRequest, short_tmp: Path) -> str:
    """A listen address for each built-in transport."""
    return address_for(request.param, short_tmp)
