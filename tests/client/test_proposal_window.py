"""The proposal window of a member's clients: it shrinks while ops wait for room and
commit slower than the target, never below its floor, and grows back otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest

from lazily_queue import ClientAccess, ClientGrant
from lazily_queue.client.proposal_window import (
    DEFAULT_COMMIT_TARGET,
    FSYNC_FACTOR,
    ProposalWindow,
)
from lazily_queue.config import ConfigError
from lazily_queue.errors import InvalidConfiguration
from tests.client.one_member import TOKEN, one_member, web_client_config


def _slow_turns(window: ProposalWindow, turns: int, latency: float,
                pressed: bool = True) -> list[int]:
    """The window's size after each of ``turns`` intervals, one commit of ``latency``
    seconds each."""
    sizes = []
    for _ in range(turns):
        if pressed:
            window.pressed()
        _clock[0] += 1.0
        window.committed(latency, now=_clock[0])
        sizes.append(window.size)
    return sizes


_clock = [0.0]


def test_slow_commits_under_pressure_shrink_the_window_by_a_fifth_down_to_its_floor() -> None:
    window = ProposalWindow(100, 40, target=0.01)
    assert _slow_turns(window, 6, latency=0.05) == [80, 64, 51, 40, 40, 40]


def test_without_pressure_slow_commits_leave_the_window_alone() -> None:
    window = ProposalWindow(100, 10, target=0.01)
    assert _slow_turns(window, 5, latency=0.05, pressed=False) == [100] * 5


def test_fast_commits_grow_it_back_to_its_ceiling() -> None:
    window = ProposalWindow(100, 10, target=0.01)
    _slow_turns(window, 10, latency=0.05)
    assert window.size == 10
    sizes = _slow_turns(window, 60, latency=0.002)
    assert sizes[:3] == [11, 12, 13] and sizes[-1] == 100 and max(sizes) == 100


def test_the_mean_commit_of_an_interval_decides_and_it_changes_once_an_interval() -> None:
    window = ProposalWindow(100, 10, target=0.01, interval=1.0)
    window.pressed()
    window.committed(0.05, now=0.0)  # the first interval ends at once
    assert window.size == 80
    window.pressed()
    for now in (0.1, 0.2, 0.3):
        window.committed(0.004, now=now)
    assert window.size == 80  # no change within an interval
    window.committed(0.02, now=1.0)  # the interval ends: mean 0.008 s
    assert window.size == 85  # grew: the mean met the target
    window.pressed()
    for now in (1.1, 1.2, 1.3):
        window.committed(0.004, now=now)
    window.committed(0.04, now=2.0)  # mean 0.013 s, though most were fast
    assert window.size == 68


def test_a_slow_disk_raises_the_target() -> None:
    fsync = 0.004
    window = ProposalWindow(100, 10, target=0.01, fsync=lambda: fsync)
    assert window.current_target() == pytest.approx(FSYNC_FACTOR * 0.004)
    assert _slow_turns(window, 3, latency=0.03) == [100] * 3  # under 10 fsyncs
    fsync = 0.0001
    assert _slow_turns(window, 1, latency=0.03) == [80]


def test_target_zero_keeps_the_ceiling() -> None:
    window = ProposalWindow(64, 8, target=0)
    assert window.current_target() == 0
    assert _slow_turns(window, 5, latency=10.0) == [64] * 5


@pytest.mark.parametrize("ceiling, target, message", [
    (0, 0.01, "at least 1 op"), (10, -1.0, "a number of seconds, 0 or more"),
    (10, float("nan"), "a number of seconds, 0 or more")])
def test_bad_arguments_are_refused(ceiling: int, target: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ProposalWindow(ceiling, 1, target=target)


def test_the_floor_stays_within_the_ceiling() -> None:
    assert ProposalWindow(8, 32).floor == 8 and ProposalWindow(8, 0).floor == 1


@pytest.mark.parametrize("bad", [-0.01, float("nan"), float("inf"), "10ms", True])
def test_client_access_refuses_a_commit_target_that_is_no_number_of_seconds(bad: object) -> None:
    with pytest.raises(InvalidConfiguration, match="commit_target must be a number of seconds"):
        ClientAccess([], commit_target=bad)  # type: ignore[arg-type]


async def test_a_members_window_keeps_under_its_clients_commit_target() -> None:
    for target in (0.0, 0.05):
        access = ClientAccess([ClientGrant("web", TOKEN, produce=["*"])], commit_target=target)
        async with one_member(access) as node:
            assert node.clients is not None
            stats = node.clients.stats()
            assert stats["window"] == 512  # half of max_total_in_flight, not shrunk
            control = node.clients._fair.control
            assert control.target == target and control.current_target() == target


def test_the_commit_target_is_read_from_the_configuration(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "node.toml"
    monkeypatch.setenv("LQ_WEB", TOKEN.decode())

    def loaded(top: str) -> ClientAccess:
        access = web_client_config(config, top).client_access()
        assert access is not None
        return access

    assert loaded("client_commit_target = 0.05").commit_target == 0.05
    assert loaded("client_commit_target = 0").commit_target == 0
    assert loaded("").commit_target == DEFAULT_COMMIT_TARGET
    for bad in ("-1", '"10ms"', "true", "nan"):
        with pytest.raises(ConfigError, match="`client_commit_target` must be a number of "
                                              "seconds, 0 or more"):
            loaded(f"client_commit_target = {bad}")
