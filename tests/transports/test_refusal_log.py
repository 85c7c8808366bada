"""A peer refused for one reason, dial after dial and probe after probe, is logged once
at WARNING (then at DEBUG) until a link is established; a peer that answered with a
refusal is not later called "never reached"."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from lazily_transports import Mesh
from transport_helpers import eventually, make_config

pytestmark = pytest.mark.timeout(30)

FAST: dict[str, Any] = {"backoff_initial": 0.01, "backoff_max": 0.05, "connect_timeout": 2.0,
        "probe_after": 0.01}


def _said(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == level
            and "peer 2 failed the cluster-secret challenge" in r.getMessage()]


def _two_nodes(short_tmp: Path, caplog: pytest.LogCaptureFixture) -> tuple[str, str, Any]:
    """Node 1's and node 2's addresses, and node 2's config with another secret."""
    caplog.set_level(logging.DEBUG, logger="lazily_transports")
    return (f"unix://{short_tmp}/n1.sock", f"unix://{short_tmp}/n2.sock",
            make_config(2, secret=b"another-secret-entirely"))


async def test_a_refusal_is_said_once_until_a_link_is_established(
    short_tmp: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    a1, a2, wrong = _two_nodes(short_tmp, caplog)
    async with Mesh(make_config(1), a1, {2: a2}, **FAST) as one:
        async with Mesh(wrong, a2, {1: a1}, **FAST):
            # Node 1 dials node 2, node 2 probes node 1: both ends refuse, again and again.
            await eventually(lambda: len(_said(caplog, logging.DEBUG)) >= 6)
        assert len(_said(caplog, logging.WARNING)) == 1, _said(caplog, logging.WARNING)
        async with Mesh(make_config(2), a2, {1: a1}, **FAST):
            await eventually(lambda: one.is_up(2))
        async with Mesh(wrong, a2, {1: a1}, **FAST):
            await eventually(lambda: len(_said(caplog, logging.WARNING)) == 2)


async def test_a_peer_that_refused_is_not_called_never_reached(
    short_tmp: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    a1, a2, wrong = _two_nodes(short_tmp, caplog)
    async with Mesh(make_config(1), a1, {2: a2}, unreachable_after=0.0,
                    **FAST) as one:
        async with Mesh(wrong, a2, {1: a1}, **FAST):
            await eventually(lambda: _said(caplog, logging.WARNING))
        failures = one.counters(2).connect_failures
        await eventually(lambda: one.counters(2).connect_failures >= failures + 3)
    assert not [r for r in caplog.records if "not reached" in r.getMessage()]
