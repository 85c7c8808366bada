"""Probes: a peer that should be dialed asks why it is not, and learns the real cause."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest
from lazily_transports import (
    AuthenticationError,
    HandshakeError,
    Mesh,
    PeerRejectedError,
    PeerUp,
    dial,
    probe,
)
from lazily_transports._core import _peer_reach
from lazily_transports._core._probe_notes import read_answer
from transport_helpers import address_for, eventually, make_config, unique_memory_address

pytestmark = pytest.mark.timeout(30)

FAST = {"backoff_initial": 0.01, "backoff_max": 0.1, "connect_timeout": 2.0}


@asynccontextmanager
async def member(address: str, peers: dict[int, str], **kwargs: object) -> AsyncIterator[Mesh]:
    """Mesh node 1 listening on ``address`` and knowing ``peers``."""
    async with Mesh(make_config(1), address, peers, **{**FAST, **kwargs}) as mesh:  # type: ignore[arg-type]
        yield mesh


def aged(mesh: Mesh, peer_id: int) -> None:
    """Make the link to ``peer_id`` look up for long: a probe now is no start-up race."""
    mesh._link(peer_id).up_since -= 3600


async def wait_trouble(mesh: Mesh, peer_id: int, text: str) -> str:
    await eventually(lambda: text in (mesh.trouble(peer_id) or ""))
    return mesh.trouble(peer_id) or ""


@pytest.mark.parametrize("kind", ["memory", "unix", "tcp", "ws"])
async def test_a_probe_reveals_the_cause_in_order(kind: str, short_tmp: Path) -> None:
    nowhere = f"unix://{short_tmp}/nowhere.sock"
    async with member(address_for(kind, short_tmp), {2: nowhere}) as mesh:
        bound = mesh.listen_address
        assert bound is not None

        async def refusal(**config: object) -> HandshakeError:
            with pytest.raises(HandshakeError) as info:
                await probe(bound, make_config(**config), expect_peer_id=1)  # type: ignore[arg-type]
            return info.value

        # A stranger from another cluster, even with an unknown id and a wrong secret.
        error = await refusal(peer_id=9, session_id="other", secret=b"wrong")
        assert error.field == "session_id"
        # An unknown id, even with a wrong secret.
        error = await refusal(peer_id=9, secret=b"wrong")
        assert error.field == "peer_id" and "peer 9 is not a member" in error.message
        # A member with the wrong secret: the HMAC runs before any direction check.
        error = await refusal(peer_id=2, secret=b"wrong")
        assert isinstance(error, AuthenticationError | PeerRejectedError)
        assert error.field == "auth"
        # Everything checks out: the member says how it tries to reach us.
        note = await probe(bound, make_config(2), expect_peer_id=1)
        assert note.startswith(f"node 1 dials node 2 at {nowhere}")
        assert not mesh.is_up(2)
        assert not any(isinstance(event, PeerUp) for event in _drain(mesh))


def _drain(mesh: Mesh) -> list[object]:
    events: list[object] = []
    while True:
        try:
            events.append(mesh.events.receive_nowait())
        except (anyio.WouldBlock, anyio.EndOfStream):
            return events


async def test_a_wrong_secret_dialing_the_wrong_way_hears_about_the_secret(
    short_tmp: Path,
) -> None:
    async with member(address_for("unix", short_tmp), {2: f"unix://{short_tmp}/n2.sock"}) as mesh:
        bound = mesh.listen_address
        assert bound is not None
        with pytest.raises(HandshakeError) as info:
            await dial(bound, make_config(2, secret=b"wrong"))
        assert info.value.field == "auth"
        with pytest.raises(PeerRejectedError, match="must accept links from the lower id 1"):
            await dial(bound, make_config(2))


async def test_the_higher_id_learns_it_is_unknown(
    short_tmp: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="lazily_transports")
    a1, a2 = (address_for("unix", short_tmp).replace("link", f"n{i}") for i in (1, 2))
    async with member(a1, {}), Mesh(make_config(2), a2, {1: a1}, probe_after=0.05) as two:
        trouble = await wait_trouble(two, 1, "not a member")
        assert "peer 2 is not a member" in trouble
        probes = [r for r in caplog.records if r.getMessage().startswith("probing peer 1")]
        assert probes and probes[0].levelno == logging.WARNING


async def test_the_higher_id_learns_where_it_is_dialed(
    short_tmp: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A member dialing a wrong address fails while we listen: said once at WARNING,
    with the hint, however often we probe."""
    caplog.set_level(logging.DEBUG, logger="lazily_transports")
    a1, a2 = (address_for("unix", short_tmp).replace("link", f"n{i}") for i in (1, 2))
    stale = f"unix://{short_tmp}/stale.sock"
    async with (
        member(a1, {2: stale}),
        Mesh(make_config(2), a2, {1: a1}, probe_after=0.05) as two,
    ):
        trouble = await wait_trouble(two, 1, "has not dialed us")
        assert f"node 1 dials node 2 at {stale}, last failure: " in trouble
        assert "check that its [peers] lists this node's address" in trouble
        assert trouble.endswith(  # or the others know node 2 there, and this one is old
            f"; or this process may be a stale copy of node 2, a member now at {stale} (the "
            "address the others know): stop it, or remove node 2 from the cluster and add "
            "it back at this node's address")

        def probes(level: int) -> list[logging.LogRecord]:
            return [r for r in caplog.records if r.levelno == level
                    and r.getMessage().startswith("probing peer 1")]

        await eventually(lambda: len(probes(logging.DEBUG)) >= 2)  # probed again since
        [warning] = probes(logging.WARNING)
        assert "check that its [peers] lists this node's address" in warning.getMessage()
        assert two.trouble(1) == trouble


async def test_a_member_that_dials_late_is_no_misconfiguration(
    short_tmp: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Members starting together: the lower id dialed the higher one before it listened
    and waits out its backoff. Its answer to a probe says so: the prober logs no hint to
    check the [peers], and nothing at WARNING."""
    caplog.set_level(logging.DEBUG, logger="lazily_transports")
    a1, a2 = (address_for("unix", short_tmp).replace("link", f"n{i}") for i in (1, 2))
    slow = {"backoff_initial": 3600.0, "backoff_max": 3600.0}
    async with member(a1, {2: a2}, **slow) as one:
        await eventually(lambda: one.trouble(2) is not None)  # refused: 2 does not listen
        async with Mesh(make_config(2), a2, {1: a1}, probe_after=0.05) as two:
            trouble = await wait_trouble(two, 1, "on its way")
            assert f"(node 1 dials node 2 at {a2}, last failure: " in trouble
            assert "[peers]" not in trouble
    assert not [r for r in caplog.records if "[peers]" in r.getMessage()]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


async def test_a_dial_failure_handled_after_the_peer_listened_is_still_late(
    short_tmp: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The dialer's loop, busy at start-up, handles the refusal of a dial begun before
    the peer listened only once the peer listens and probes it: the dial is still late
    (it began before), so the prober says the link is on its way, nothing at WARNING."""
    from lazily_transports._core import _peer_reach

    caplog.set_level(logging.DEBUG, logger="lazily_transports")
    a1, a2 = (address_for("unix", short_tmp).replace("link", f"n{i}") for i in (1, 2))
    refused, handled = asyncio.Event(), asyncio.Event()
    real_dial, real_probe = _peer_reach.dial, _peer_reach.probe

    async def busy_dial(*args: Any, **kwargs: Any) -> Any:
        try:
            return await real_dial(*args, **kwargs)
        except Exception:
            refused.set()
            await handled.wait()  # the loop gets to the failure only now
            raise

    slow = {"backoff_initial": 3600.0, "backoff_max": 3600.0}
    monkeypatch.setattr(_peer_reach, "dial", busy_dial)
    async with member(a1, {2: a2}, **slow) as one:

        async def probe_once_handled(*args: Any, **kwargs: Any) -> Any:
            handled.set()  # the failure is handled after the probe is sent
            await eventually(lambda: one.trouble(2) is not None)
            return await real_probe(*args, **kwargs)

        monkeypatch.setattr(_peer_reach, "probe", probe_once_handled)
        await refused.wait()  # 2 does not listen yet
        async with Mesh(make_config(2), a2, {1: a1}, probe_after=0.05) as two:
            trouble = await wait_trouble(two, 1, "accepted our credentials")
            assert "on its way" in trouble and "[peers]" not in trouble
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


@pytest.mark.parametrize("added", [False, True])
@pytest.mark.parametrize("dials", [True, False])
async def test_a_member_never_reached_is_said_once_with_what_to_check(
    dials: bool, added: bool, short_tmp: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A member that is down (or listens elsewhere) is logged once at WARNING, by the
    node that dials it and by the one that probes it, after ``unreachable_after`` from
    the mesh's start, or from when it was ``added`` to a running mesh."""
    caplog.set_level(logging.DEBUG, logger="lazily_transports")
    nowhere = f"unix://{short_tmp}/nowhere.sock"
    me, peer = (1, 2) if dials else (2, 1)
    async with Mesh(make_config(me), address_for("unix", short_tmp),
                    {} if added else {peer: nowhere}, probe_after=0.01,
                    unreachable_after=0.0, **FAST) as mesh:  # type: ignore[arg-type]
        if added:
            mesh.add_peer(peer, nowhere)
        doing = "dialing" if dials else "probing"

        def failures(level: int) -> list[logging.LogRecord]:
            return [r for r in caplog.records if r.levelno == level
                    and r.getMessage().startswith(f"{doing} peer {peer} at {nowhere} failed")]

        await eventually(lambda: len(failures(logging.DEBUG)) >= 2)
        [warning] = failures(logging.WARNING)
        assert warning.getMessage().endswith(
            "s since this node began trying it: check that it runs and listens at this "
            "address")
        assert not mesh.is_up(peer)


async def test_probing_stops_once_linked(short_tmp: Path) -> None:
    a1, a2 = (address_for("unix", short_tmp).replace("link", f"n{i}") for i in (1, 2))
    async with Mesh(make_config(2), a2, {1: a1}, probe_after=0.05, **FAST) as two:  # type: ignore[arg-type]
        await wait_trouble(two, 1, "unreachable")
        async with member(a1, {2: a2}):
            await eventually(lambda: two.is_up(1))
            assert two.trouble(1) is None
            await asyncio.sleep(0.3)  # several probe intervals: the link stays the only one
            assert two.is_up(1) and two.counters(1).connects == 1


async def test_a_probe_over_a_link_that_looks_up_makes_the_dialer_dial_again(
    short_tmp: Path,
) -> None:
    """The dialed member restarted (or the link is half-open): its probe tells us, and
    we drop the stale link and dial again instead of waiting to notice it is dead."""
    low, high = unique_memory_address(), unique_memory_address()
    async with Mesh(make_config(2), high, {1: low}, **FAST) as two, \
            member(low, {2: high}) as one:  # node 1 dials node 2
        await eventually(lambda: one.is_up(2) and two.is_up(1))
        first = one.epoch(2)
        aged(one, 2)
        note = await probe(low, make_config(2), expect_peer_id=1)
        assert note == "node 1 had a stale link to node 2 and dials it again"
        await eventually(lambda: one.is_up(2) and one.epoch(2) > first)


async def test_a_probe_that_crossed_a_link_coming_up_leaves_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Members starting together: the dialed one probes while the link is being set up,
    and its probe arrives once the link is up at the dialer. The link is not dropped (no
    redial, no broken pipe at the other end): the prober is told it is up."""
    caplog.set_level(logging.DEBUG, logger="lazily_transports")
    low, high = unique_memory_address(), unique_memory_address()
    async with Mesh(make_config(2), high, {1: low}, **FAST) as two:  # type: ignore[arg-type]
        async with member(low, {2: high}) as one:
            await eventually(lambda: one.is_up(2) and two.is_up(1))
            first = one.epoch(2)
            note = await probe(low, make_config(2), expect_peer_id=1)
            assert note == "node 1 has a link to node 2 up"
            assert one.is_up(2) and one.epoch(2) == first and one.counters(2).connects == 1
            assert two.is_up(1) and two.counters(1).connects == 1
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


async def test_a_probe_from_a_process_the_vetter_refuses_leaves_the_link_up() -> None:
    """A second process claiming the dialed member (``vet_peer`` tells it apart by the
    features it announces) probes us: it is told why it is refused, and the link to the
    member our link reaches is neither dropped nor dialed again."""
    low, high = unique_memory_address(), unique_memory_address()

    def vet(peer_id: int, features: frozenset[str]) -> str | None:
        return "a second process of node 2" if "copy" in features else None

    async with Mesh(make_config(2), high, {1: low}, **FAST) as two, \
            member(low, {2: high}, vet_peer=vet) as one:
        await eventually(lambda: one.is_up(2) and two.is_up(1))
        first = one.epoch(2)
        note = await probe(low, make_config(2, features=frozenset({"copy"})),
                           expect_peer_id=1)
        assert note == "node 1 refuses links from node 2: a second process of node 2"
        assert one.counters(2).refused == 1
        aged(one, 2)
        note = await probe(low, make_config(2), expect_peer_id=1)  # the member itself
        assert note == "node 1 had a stale link to node 2 and dials it again"
        await eventually(lambda: one.is_up(2) and one.epoch(2) > first)
        assert one.counters(2).connects == 2


@pytest.mark.parametrize(("note", "hint"), [
    ("node 1 dials node 2 at tcp://h:1", False),  # dialing now
    ("node 1 dials node 2 at tcp://h:1, last failure 3.00s ago: refused", False),  # before
    ("node 1 dials node 2 at tcp://h:1, last failure 0.10s ago: refused", True),  # since
    ("node 1 dials node 2 at tcp://h:1, last failure: refused", True),  # no age said
    ("node 1 has a link to node 2 up", False),
    ("node 1 had a stale link to node 2 and dials it again", False),
    ("", True),  # it has no link to us
])
def test_a_probe_answer_gives_the_peers_hint_only_when_it_applies(note: str,
                                                                 hint: bool) -> None:
    """Read by a prober that has listened for 1 s when it probed."""
    from lazily_transports._core._probe_notes import read_answer

    reading = read_answer(1, note, 1.0)
    assert ("check that its [peers]" in reading.outcome) is hint
    assert reading.level == (logging.WARNING if hint else logging.DEBUG)
    assert "s ago" not in reading.outcome  # the same failure reads alike at every probe


def test_a_stale_copy_of_a_moved_member_is_told_where_the_member_is() -> None:
    """A copy of node 3 started at its old address, while the member runs at the one the
    others know, learns that it may be that stale copy and what to do: not only to have
    the others' [peers] corrected to its own address, which would take the member's
    place."""
    from lazily_transports._core._probe_notes import read_answer

    reading = read_answer(1, "node 1 dials node 3 at tcp://node-c:7003, last failure 0.10s "
                             "ago: connection refused", 1.0)
    assert reading.level == logging.WARNING
    assert reading.outcome == (
        "peer 1 accepted our credentials but has not dialed us (node 1 dials node 3 at "
        "tcp://node-c:7003, last failure: connection refused): check that its [peers] lists "
        "this node's address; or this process may be a stale copy of node 3, a member now "
        "at tcp://node-c:7003 (the address the others know): stop it, or remove node 3 "
        "from the cluster and add it back at this node's address")


def test_a_peer_that_cannot_verify_the_probers_certificate_points_at_that_certificate() -> None:
    """Not at its [peers]: it dials the right address, and this node's certificate fails
    there (it names another host, or another CA signed it)."""
    from lazily_transports._core._probe_notes import read_answer

    failure = ("[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: IP address "
               "mismatch, certificate is not valid for '127.0.0.1'. (_ssl.c:1006)")
    reading = read_answer(3, f"node 1 dials node 3 at tls://127.0.0.1:7003, last failure "
                             f"0.10s ago: {failure}", 1.0)
    assert reading.level == logging.WARNING
    assert "IP address mismatch" in reading.outcome
    assert "check that its [peers]" not in reading.outcome
    assert reading.outcome.endswith("it cannot verify this node's TLS certificate: give this "
                                    "node one signed by the CA in the peer's `ca` that names "
                                    "the address the peer dials")


async def test_a_link_dropped_mid_handshake_leaves_the_refusal_standing(
        short_tmp: Path) -> None:
    """A peer that refuses this node often ends its next handshakes early: the trouble
    still says why it refuses until another reason comes."""
    nowhere = f"unix://{short_tmp}/nowhere.sock"
    async with member(address_for("unix", short_tmp), {2: nowhere}) as mesh:
        link = mesh._link(2)
        refused = "handshake failed on 'peer_id': peer 1 is not a member of this mesh"
        link.note_trouble(refused)
        link.note_trouble("handshake failed on 'handshake': link closed", transient=True)
        assert mesh.trouble(2) == refused
        link.note_trouble("unreachable: connection refused")
        assert mesh.trouble(2) == "unreachable: connection refused"


async def test_the_trouble_says_since_when_it_stands(
        short_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``trouble_since`` is when the trouble came to say what it says: a refusal repeated,
    or a transient drop after it, leaves it; another reason moves it, the link up clears
    it."""
    wall = SimpleNamespace(time=lambda: 1000.0, monotonic=time.monotonic)
    monkeypatch.setattr(_peer_reach, "time", wall)
    nowhere = f"unix://{short_tmp}/nowhere.sock"
    async with member(address_for("unix", short_tmp), {2: nowhere}) as mesh:
        link = mesh._link(2)
        link.trouble = None
        assert mesh.trouble_since(2) is None
        refused = "handshake failed on 'peer_id': peer 1 is not a member of this mesh"
        link.note_trouble(refused)
        assert mesh.trouble_since(2) == 1000.0
        wall.time = lambda: 1005.0
        link.note_trouble(refused)
        link.note_trouble("handshake failed on 'handshake': link closed", transient=True)
        assert mesh.trouble_since(2) == 1000.0
        link.note_trouble("unreachable: connection refused")
        assert mesh.trouble_since(2) == 1005.0
        link.trouble = None
        assert mesh.trouble_since(2) is None


async def test_a_link_moved_to_another_address_tells_no_failure_of_the_former_one(
        short_tmp: Path) -> None:
    """A dialer readdressed after failing at a peer's former address answers the peer's
    probe with the address it dials now and no failure met elsewhere: the prober then
    reads a link on its way, not a `[peers]` to check."""
    former, moved = (f"unix://{short_tmp}/{name}.sock" for name in ("former", "moved"))
    async with Mesh(make_config(1), None, {2: former}, backoff_initial=60.0,
                    backoff_max=60.0) as mesh:
        await eventually(lambda: mesh.trouble(2) is not None)  # one dial, the next in 60 s
        assert f"node 1 dials node 2 at {former}, last failure " in (
            mesh._incoming.answer_probe(2, frozenset()))
        mesh.readdress(2, moved)
        answer = mesh._incoming.answer_probe(2, frozenset())
        assert answer == f"node 1 dials node 2 at {moved}"
        assert read_answer(2, answer, 0.0).level == logging.DEBUG
