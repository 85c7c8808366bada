"""Suite-wide configuration: the event loop under test and fixture locations.

``LAZILY_TEST_LOOP=uvloop`` runs every test that runs on an event loop (a coroutine
test, or one using an async fixture) on uvloop instead of the standard asyncio loop, and
deselects the others; ``make test`` runs the suite on asyncio, then those tests again on
uvloop.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from tests.clock import FakeClock

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


def _runs_on_a_loop(item: pytest.Item) -> bool:
    if inspect.iscoroutinefunction(getattr(item, "obj", None)):
        return True
    info = getattr(item, "_fixtureinfo", None)
    for defs in (info.name2fixturedefs.values() if info is not None else ()):
        for fixture in defs:
            if inspect.iscoroutinefunction(fixture.func) or inspect.isasyncgenfunction(
                    fixture.func):
                return True
    return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _group_by_xdist_mark(config, items)
    if os.environ.get("LAZILY_TEST_LOOP") != "uvloop":
        return
    kept = [item for item in items if _runs_on_a_loop(item)]
    dropped = [item for item in items if not _runs_on_a_loop(item)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def _group_by_xdist_mark(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``--dist loadgroup``: the tests marked ``xdist_group(NAME)`` run on one worker.
    pytest-xdist 3.8 marks them by setting ``item._nodeid``, which pytest 9 no longer
    reads (each such test went to any worker); the id is suffixed here as xdist would."""
    if getattr(config.option, "loadgroup", False) is not True:
        return
    try:
        from _pytest.nodeid import coerce_node_id  # type: ignore[import-not-found]
    except ImportError:  # an older pytest: xdist's own suffix is read
        return
    for item in items:
        names = sorted({str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
                        for mark in item.iter_markers("xdist_group")})
        if names and "@" not in item.nodeid:
            item._id = coerce_node_id(f"{item.nodeid}@{'_'.join(names)}")  # type: ignore[attr-defined]


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


@pytest.fixture
def wall(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    """``time.time`` (what stamps replicated entries) as a clock the test moves, from now."""
    clock = FakeClock(time.time())
    monkeypatch.setattr(time, "time", clock)
    return clock


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A short temporary directory (Unix socket paths are limited to 107 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="lq-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)
