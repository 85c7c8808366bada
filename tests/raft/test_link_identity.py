"""One process per member id: a second process is refused only while the first one's link
is live (up, and heard within the window)."""

from __future__ import annotations

import logging

import pytest

from lazily_queue.raft.link_identity import KEEPALIVE_FEATURE, PROCESS, LinkIdentity


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _features(process: str) -> frozenset[str]:
    return frozenset({PROCESS + process, KEEPALIVE_FEATURE})


def _identity(up: set[str]) -> tuple[LinkIdentity, Clock]:
    clock = Clock()
    return LinkIdentity("2", 1.2, lambda peer: peer in up, clock), clock


def test_a_second_process_is_refused_while_the_first_is_live(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="lazily_queue.raft.link_identity")
    identity, clock = _identity({"1"})
    assert identity.vet("1", _features("a")) is None
    assert identity.keepalive == {"1"}
    clock.now += 1.0
    identity.heard_at["1"] = clock.now
    for _ in range(5):
        clock.now += 0.5
        identity.heard_at["1"] = clock.now
        refusal = identity.vet("1", _features("b"))
        assert refusal is not None and "two processes share id 1" in refusal
    assert identity.refused == 5
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1, lines  # once per interval, naming the likely causes
    assert "a copy of node 1's data directory runs elsewhere" in lines[0]
    assert "id 1 is configured on two nodes" in lines[0]
    assert identity.vet("1", _features("a")) is None  # the same process relinks


def test_a_restarted_member_is_taken_once_its_old_link_is_down_or_silent() -> None:
    up = {"1"}
    identity, clock = _identity(up)
    assert identity.vet("1", _features("a")) is None
    up.clear()  # the old process was stopped or killed: its link closed
    assert identity.vet("1", _features("b")) is None
    up.add("1")
    clock.now += 1.3  # still up, but nothing arrived for longer than the window
    assert identity.vet("1", _features("c")) is None
    clock.now += 0.1
    assert identity.vet("1", _features("d")) is not None  # "c" is live now


def test_a_removed_member_and_an_older_version_are_not_held_to_a_process() -> None:
    identity, _ = _identity({"1"})
    assert identity.vet("1", _features("a")) is None
    identity.forget("1")
    assert identity.vet("1", _features("b")) is None
    assert identity.vet("1", frozenset()) is None  # announces no process: not compared
    assert identity.keepalive == set()


def test_the_window_must_be_positive() -> None:
    with pytest.raises(ValueError, match="seconds > 0"):
        LinkIdentity("1", 0, lambda peer: True)
