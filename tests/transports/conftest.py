"""Fixtures for the transports tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from transport_helpers import address_for


@pytest.fixture(params=["memory", "unix", "tcp", "ws"])
def address(request: pytest.FixtureRequest, short_tmp: Path) -> str:
    """A listen address for each built-in transport."""
    return address_for(request.param, short_tmp)
