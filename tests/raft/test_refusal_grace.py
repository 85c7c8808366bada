"""A node refused as a second process of a live member waits out the peers' liveness
window before its start fails: its old process may only have gone silent."""

from __future__ import annotations

import logging
from types import SimpleNamespace

from lazily_transports.errors import HandshakeError, PeerRejectedError

from lazily_queue.link_trouble import LinkTrouble, refusal_grace
from lazily_queue.raft.link_identity import DUPLICATE, LIVE_ELECTIONS, LinkIdentity


def _node(election_timeout_max: float) -> SimpleNamespace:
    engine = SimpleNamespace(election_timeout_max=election_timeout_max)
    return SimpleNamespace(driver=SimpleNamespace(replica=SimpleNamespace(
        config=SimpleNamespace(engine=engine))))


def _refused(watch: LinkTrouble, error: Exception) -> None:
    watch.emit(logging.LogRecord("lazily_transports.mesh", logging.WARNING, __file__, 1,
                                 "dialing peer %d at %s failed: %s",
                                 (2, "unix:n2.sock", error), None))


def _duplicate_refusal() -> PeerRejectedError:
    """What a peer holding a live link of node 1 answers node 1's new process."""
    identity = LinkIdentity("2", 1.2, is_up=lambda _peer: True, clock=lambda: 100.0)
    assert identity.vet("1", frozenset({"process:aa"})) is None  # the old process's link
    reason = identity.vet("1", frozenset({"process:bb"}))
    assert reason is not None and reason.startswith(f"{DUPLICATE} 1 ")
    return PeerRejectedError("peer_id", f"peer refused the link: {reason}")


def test_a_refusal_as_a_second_process_is_given_the_liveness_window_more() -> None:
    watch = LinkTrouble()
    _refused(watch, _duplicate_refusal())
    assert watch.fatal is not None and "two processes share id 1" in watch.fatal
    assert watch.duplicate
    grace = refusal_grace(_node(0.6), watch, 1.0)  # type: ignore[arg-type]
    assert grace == 1.0 + LIVE_ELECTIONS * 0.6


def test_other_refusals_keep_the_short_grace() -> None:
    watch = LinkTrouble()
    _refused(watch, PeerRejectedError("peer_id", "peer refused the link: peer 4 is not a "
                                                 "member of this mesh"))
    assert watch.fatal is not None and not watch.duplicate
    assert refusal_grace(_node(0.6), watch, 1.0) == 1.0  # type: ignore[arg-type]
    _refused(watch, _duplicate_refusal())  # the latest refusal decides
    assert watch.duplicate
    _refused(watch, HandshakeError("auth", "wrong secret"))
    assert not watch.duplicate
    assert refusal_grace(_node(0.6), watch, 1.0) == 1.0  # type: ignore[arg-type]
