"""A peer whose host name does not resolve: the failure names the address, and the one
warning about a peer never reached says to check the name, not whether it listens."""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from lazily_transports import LookupTimeoutError, Mesh, dial, probe
from lazily_transports._core._probe_notes import lookup_timed_out, read_answer
from transport_helpers import eventually, make_config

pytestmark = pytest.mark.timeout(30)

FAST = {"backoff_initial": 0.01, "backoff_max": 0.1, "connect_timeout": 2.0}
HOST = "peer.lazily-unnamed.test"


@pytest.fixture(autouse=True)
def unnamed(monkeypatch: pytest.MonkeyPatch) -> None:
    """:data:`HOST` is in no DNS."""
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host == HOST:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


@pytest.mark.parametrize("address", [f"tcp://{HOST}:7002", f"ws://{HOST}:7002/raft"])
@pytest.mark.parametrize("reach", [dial, probe])
async def test_a_dial_or_probe_of_a_name_not_in_dns_names_the_address(
        address: str, reach: Any) -> None:
    with pytest.raises(socket.gaierror) as info:
        await reach(address, make_config(1))
    assert str(info.value) == (f"[Errno {socket.EAI_NONAME}] the host name of {address} does "
                               "not resolve (Name or service not known)")
    assert info.value.errno == socket.EAI_NONAME


@pytest.mark.parametrize("dials", [True, False])
async def test_a_member_whose_name_never_resolves_is_said_once_to_check_the_name(
        dials: bool, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="lazily_transports")
    nowhere = f"tcp://{HOST}:7002"
    me, peer = (1, 2) if dials else (2, 1)
    async with Mesh(make_config(me), "tcp://127.0.0.1:0", {peer: nowhere}, probe_after=0.01,
                    unreachable_after=0.0, **FAST) as mesh:  # type: ignore[arg-type]
        doing = "dialing" if dials else "probing"

        def failures(level: int) -> list[logging.LogRecord]:
            return [r for r in caplog.records if r.levelno == level
                    and r.getMessage().startswith(f"{doing} peer {peer} at {nowhere} failed")]

        await eventually(lambda: len(failures(logging.DEBUG)) >= 2)
        [warning] = failures(logging.WARNING)
        assert "the host name of" in warning.getMessage()
        assert warning.getMessage().endswith(
            "check that its host name resolves here (this node keeps trying it)")
        assert "does not resolve" in (mesh.trouble(peer) or "")


async def test_a_member_probing_a_dialer_that_cannot_resolve_its_name_is_told_so(
        short_tmp: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Node 2 probes node 1, which dials it by a name node 1 cannot resolve: node 2 says
    that name is the trouble, not node 1's ``[peers]``."""
    caplog.set_level(logging.WARNING, logger="lazily_transports")
    one, two = (f"unix://{short_tmp}/n{i}.sock" for i in (1, 2))
    async with Mesh(make_config(2), two, {1: one}, probe_after=0.01, **FAST) as second:  # type: ignore[arg-type]
        async with Mesh(make_config(1), one, {2: f"tcp://{HOST}:7002"}, **FAST):  # type: ignore[arg-type]
            await eventually(lambda: "cannot resolve" in (second.trouble(1) or ""))
            trouble = second.trouble(1) or ""
    assert trouble.endswith(": the peer cannot resolve the host name it dials this node at: "
                            "check that name where peer 1 runs (it keeps trying)"), trouble
    assert f"the host name of tcp://{HOST}:7002 does not resolve" in trouble
    assert not [r for r in caplog.records if "[peers]" in r.getMessage()]


SLOW = "peer.lazily-slow-dns.test"


@pytest.fixture
async def hanging(monkeypatch: pytest.MonkeyPatch
                  ) -> AsyncIterator[tuple[list[str], threading.Event]]:
    """:data:`SLOW`'s DNS server does not answer: its lookups hang until the event
    yielded is set (at the latest when the test ends), then fail; yields it and the
    hosts looked up so far."""
    if type(asyncio.get_running_loop()).__module__.startswith("uvloop"):
        pytest.skip("uvloop resolves names with libuv, not socket.getaddrinfo (not faked)")
    real, answer = socket.getaddrinfo, threading.Event()
    started: list[str] = []

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host == SLOW:
            started.append(host)
            answer.wait(10)
            raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    yield started, answer
    answer.set()


@pytest.mark.parametrize("address", [f"tcp://{SLOW}:7002", f"wss://{SLOW}:7002/raft"])
async def test_dials_of_a_name_whose_lookup_hangs_hold_one_thread(
        hanging: tuple[list[str], threading.Event], address: str) -> None:
    """A DNS server that does not answer: every dial times out, and they share one
    lookup (one thread of the loop's executor) instead of leaving one behind each."""
    started, answer = hanging
    for _ in range(4):
        with pytest.raises(LookupTimeoutError, match=(
                rf"looking up the host name of {address}: the lookup timed out after 0\.1 s")):
            await dial(address, make_config(1), timeout=0.1)
    assert started == [SLOW]
    assert (await asyncio.to_thread(lambda: "the executor has room")) == (
        "the executor has room")
    answer.set()
    with pytest.raises(socket.gaierror, match=f"the host name of {address} does not resolve"):
        await dial(address, make_config(1), timeout=5)


@pytest.mark.parametrize("dials", [True, False])
async def test_a_member_whose_name_lookup_hangs_is_said_once_to_check_the_resolver(
        hanging: tuple[list[str], threading.Event], dials: bool,
        caplog: pytest.LogCaptureFixture) -> None:
    """The time went into the lookup: the link's trouble and the one warning say so,
    not that the peer may not run or listen."""
    caplog.set_level(logging.DEBUG, logger="lazily_transports")
    slow = f"tcp://{SLOW}:7002"
    me, peer = (1, 2) if dials else (2, 1)
    async with Mesh(make_config(me), "tcp://127.0.0.1:0", {peer: slow}, probe_after=0.01,
                    unreachable_after=0.0, **{**FAST, "connect_timeout": 0.1}  # type: ignore[arg-type]
                    ) as mesh:
        doing = "dialing" if dials else "probing"

        def failures(level: int) -> list[logging.LogRecord]:
            return [r for r in caplog.records if r.levelno == level
                    and r.getMessage().startswith(f"{doing} peer {peer} at {slow} failed")]

        await eventually(lambda: len(failures(logging.DEBUG)) >= 2)
        [warning] = failures(logging.WARNING)
        assert "the lookup timed out after 0.1 s" in warning.getMessage()
        assert warning.getMessage().endswith(
            "check its host name and the resolver (DNS server) of this host, which did not "
            "answer its lookup (this node keeps trying it)")
        assert "runs and listens" not in warning.getMessage()
        assert f"looking up the host name of {slow}: the lookup timed out" in (
            mesh.trouble(peer) or "")


def test_a_prober_told_of_a_dialers_lookup_timing_out_points_at_that_name() -> None:
    """Not at the dialer's [peers]: its lookup of the name it dials this node at hangs."""
    failure = lookup_timed_out(f"tcp://{SLOW}:7002", 5.0)
    reading = read_answer(1, f"node 1 dials node 2 at tcp://{SLOW}:7002, last failure "
                             f"0.10s ago: {failure}", 1.0)
    assert reading.level == logging.WARNING
    assert reading.outcome.endswith(": the peer cannot resolve the host name it dials this "
                                    "node at: check that name where peer 1 runs (it keeps "
                                    "trying)"), reading.outcome
    assert "the lookup timed out after 5 s" in reading.outcome
