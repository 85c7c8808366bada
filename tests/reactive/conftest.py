"""Fixtures shared by the reactive-core tests."""

from __future__ import annotations

import pytest

from lazily_queue.reactive import Context


@pytest.fixture
def ctx(request: pytest.FixtureRequest) -> Context:
    """A fresh context per test, named after it (so error messages say which)."""
    return Context(name=request.node.name)
