"""Suite-wide configuration: the event loop under test and fixture locations.

``LAZILY_TEST_LOOP=uvloop`` runs every async test on uvloop instead of the standard
asyncio loop; ``make test`` runs the suite on both.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parent.parent

# Properties, not speed: a loaded CI machine must not fail a test through a deadline or
# the time-based health check.
settings.register_profile(
    "lazily", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("lazily")


def _loop_factory() -> tuple[str, Callable[[], asyncio.AbstractEventLoop]]:
    name = os.environ.get("LAZILY_TEST_LOOP", "asyncio")
    if name == "uvloop":
        import uvloop

        return "uvloop", uvloop.new_event_loop
    if name != "asyncio":
        raise pytest.UsageError(f"LAZILY_TEST_LOOP must be 'asyncio' or 'uvloop', not {name!r}")
    return "asyncio", asyncio.new_event_loop


def pytest_asyncio_loop_factories(config: Any, item: Any) -> Mapping[str, Callable[[], Any]]:
    name, factory = _loop_factory()
    return {name: factory}


@pytest.fixture(scope="session")
def project_root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def spec_fixtures() -> Path | None:
    """The upstream lazily-spec fixture directory, when ``LAZILY_SPEC_FIXTURES`` is set."""
    value = os.environ.get("LAZILY_SPEC_FIXTURES")
    if not value:
        return None
    path = Path(value)
    if not path.is_absolute():
        path = (ROOT / path).resolve()
    if not path.is_dir():
        raise pytest.UsageError(f"LAZILY_SPEC_FIXTURES={value!r} is not a directory")
    return path
