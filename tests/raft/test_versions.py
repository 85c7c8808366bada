"""Data directories across versions: one an older version wrote loads with all it held;
one a newer version used is refused before anything in it changes."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from lazily_queue import Node
from lazily_queue.cli import main
from lazily_queue.datadir import FEATURES_KEY, DataDirectoryTooNew
from lazily_queue.raft.disk import OsDisk
from lazily_queue.raft.journal import DurableJournal
from lazily_queue.raft.mesh import REQUIRED_FEATURES

#: Written by fixtures/datadirs/write_fixture.py with these commits checked out.
FIXTURES = Path(__file__).parents[2] / "fixtures" / "datadirs"
OLDER = ["2bc20ad", "688c318"]
#: The versions that could delete a topic subscriber.
DELETES_SUBSCRIBERS = {"2bc20ad"}


def _copy(version: str, tmp_path: Path) -> Path:
    data = tmp_path / version
    shutil.copytree(FIXTURES / version, data)
    return data


def _node(data: Path, tmp_path: Path) -> Node:
    return Node(1, data_dir=data, peers={1: f"unix:{tmp_path}/n1.sock"}, cluster="fixture",
                secret=b"fixture-secret", durability="none")


def _files(data: Path) -> dict[str, bytes]:
    """The data directory's files, the journal without its preallocated zeros."""
    return {p.name: p.read_bytes().rstrip(b"\0") if p.name == "journal.log" else p.read_bytes()
            for p in (data / "raft").iterdir()}


def _stamp(data: Path, features: list[str]) -> None:
    """Record ``features`` in ``data``'s metadata, as the version requiring them would."""
    disk = OsDisk()
    journal = DurableJournal(disk, str(data / "raft"))
    journal.set_meta(FEATURES_KEY, features)
    journal.sync()
    disk.close()


def _start_in_cli(data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    """``lazily-queue node`` on ``data``: its exit status."""
    monkeypatch.setenv("FIXTURE_SECRET", "fixture-secret")
    config = tmp_path / "node.toml"
    config.write_text(f'id = 1\ncluster = "fixture"\ndata_dir = "{data}"\n'
                      f'listen = "unix:{tmp_path}/n1.sock"\nsecret_env = "FIXTURE_SECRET"\n')
    return main(["node", "--config", str(config)])


def _meta(data: Path) -> dict[str, object]:
    disk = OsDisk()
    try:
        return dict(DurableJournal(disk, str(data / "raft")).meta)
    finally:
        disk.close()


@pytest.mark.parametrize("version", OLDER)
async def test_a_data_directory_an_older_version_wrote_loads_with_what_it_held(
    tmp_path: Path, version: str,
) -> None:
    data = _copy(version, tmp_path)
    assert FEATURES_KEY not in _meta(data)
    async with _node(data, tmp_path) as node:
        await node.wait_for_leader(timeout=10)
        await node.barrier()
        assert node.queue("q").storage.elements() == [2, 3, 4, 5]  # type: ignore[attr-defined]
        jobs = node.status()["work_queues"]["jobs"]
        assert (jobs["pending"], jobs["in_flight"], jobs["workers"]) == (2, 1, {"w1": 1})
        t = node.topic("t")
        assert t.reader("durable-sub")() == [2, 3, 4]
        assert (t.reader("gone")() is None) == (version in DELETES_SUBSCRIBERS)
        assert node.queue("once").storage.elements() == ["x"]  # type: ignore[attr-defined]
        jobs_cell = node.work_queue("jobs", visibility_timeout=86400.0, max_deliveries=3)
        assert (await jobs_cell.poll("w2")).value == "b"  # type: ignore[union-attr]
    assert _meta(data)[FEATURES_KEY] == sorted(REQUIRED_FEATURES)


async def test_a_data_directory_a_newer_version_used_is_refused_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = _copy(OLDER[0], tmp_path)
    async with _node(data, tmp_path) as node:  # this version records its features
        await node.wait_for_leader(timeout=10)
    before = _files(data)
    newest = sorted(REQUIRED_FEATURES)[-1]
    monkeypatch.setattr("lazily_queue.raft.mesh.REQUIRED_FEATURES",
                        REQUIRED_FEATURES - {newest})  # as a version before it would be
    older = _node(data, tmp_path)
    meta = re.escape(str(data / "raft" / "journal.meta"))
    with pytest.raises(DataDirectoryTooNew, match=rf"newer version of lazily-queue \({meta} "
                       rf"records the handshake features \['{newest}'\].*not downgraded"):
        await older.start()
    assert _files(data) == before


def test_the_cli_refuses_a_newer_data_directory_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = _copy(OLDER[0], tmp_path)
    _stamp(data, sorted({*REQUIRED_FEATURES, "from-the-future-v1"}))
    assert _start_in_cli(data, tmp_path, monkeypatch) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: "), err
    assert "newer version" in err and "['from-the-future-v1']" in err, err
    assert "Traceback" not in err


def test_a_feature_recorded_by_an_older_version_is_read_by_its_later_version() -> None:
    from lazily_queue.datadir import understood

    required = frozenset({"limits-v2", "link-ready-v1"})
    assert understood("limits-v1", required) and understood("limits-v2", required)
    assert understood("link-ready-v1", required)
    assert not understood("limits-v3", required)  # bumped by a newer version
    assert not understood("from-the-future-v1", required)
    assert not understood("limits", required) and not understood("limits-vx", required)


async def test_a_directory_stamped_with_an_earlier_form_of_a_feature_loads(
    tmp_path: Path,
) -> None:
    data = _copy(OLDER[0], tmp_path)
    bumped = next(f for f in sorted(REQUIRED_FEATURES) if f.endswith(("-v2", "-v3")))
    _stamp(data, sorted({*REQUIRED_FEATURES - {bumped}, bumped[:-1] + str(int(bumped[-1]) - 1)}))
    async with _node(data, tmp_path) as node:  # the version before the bump wrote it
        await node.wait_for_leader(timeout=10)
    assert _meta(data)[FEATURES_KEY] == sorted(REQUIRED_FEATURES)


def test_a_directory_stamped_with_thousands_of_unknown_features_is_refused_in_a_short_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = _copy(OLDER[0], tmp_path)
    _stamp(data, [f"feature-{i:05d}-v1" for i in range(2000)] + ["x" * 20000 + "-v1"])
    assert _start_in_cli(data, tmp_path, monkeypatch) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: "), err[:200]
    assert len(err) < 1000, err[:200]
    assert "'feature-00000-v1'" in err and "and 1993 more" in err, err
