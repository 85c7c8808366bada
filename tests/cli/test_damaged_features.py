"""Both metadata copies of a node readable but for their ``features`` field (the
handshake features of the version that last ran it): the node refuses to start in one
line naming the field and the fix that keeps its journal, term and vote
(``rejoin --reset-features``), not the wipe a lost term and vote need."""

from __future__ import annotations

from pathlib import Path

import pytest

from lazily_queue.cli import main
from lazily_queue.errors import InvalidConfiguration
from lazily_queue.node import Node
from lazily_queue.raft.disk import OsDisk
from lazily_queue.raft.journal import DurableJournal, JournalError
from lazily_queue.raft.meta import UnreadableFeatures, decode_meta, encode_meta
from lazily_queue.raft.network import LocalHub

from .node_procs import NodeProc, unix_peers, write_config
from .test_rejoin_cli import _node_with_history


async def _damaged(tmp_path: Path, value: object = 5) -> tuple[Path, Path, int]:
    """A stopped node with history whose metadata copies both hold ``features`` =
    ``value``; its raft directory, configuration file and term."""
    raft = await _node_with_history(tmp_path)
    term = 0
    for copy in sorted(raft.glob("journal.meta*")):
        meta, sequence = decode_meta(copy.read_bytes())
        term = meta["term"]
        copy.write_bytes(encode_meta({**meta, "features": value}, sequence))
    config = write_config(tmp_path / "n1.toml", 1, unix_peers(tmp_path), cluster="test",
                          data_dir=str(raft.parent))
    return raft, config, term


@pytest.mark.parametrize("value", [5, "client-sessions-v2", [1, 2], {"a": 1}])
async def test_only_features_unreadable_names_the_field_and_the_light_fix(
        tmp_path: Path, value: object) -> None:
    raft, _, term = await _damaged(tmp_path, value)
    with pytest.raises(UnreadableFeatures) as refused:
        DurableJournal(OsDisk(), str(raft))
    text = str(refused.value)
    assert isinstance(refused.value, InvalidConfiguration | JournalError)
    assert "unreadable 'features' field" in text and f"term ({term})" in text
    assert "--reset-features" in text and "no `rejoin` wipe is needed" in text
    assert "cannot know whom it voted for" not in text


async def test_a_copy_with_its_term_unreadable_too_still_gets_the_wipe_advice(
        tmp_path: Path) -> None:
    raft, _, _ = await _damaged(tmp_path)
    for copy in sorted(raft.glob("journal.meta*")):
        meta, sequence = decode_meta(copy.read_bytes(), dropping=("features",))
        copy.write_bytes(encode_meta({**meta, "features": 5, "term": "x"}, sequence))
    with pytest.raises(JournalError, match="cannot know whom it voted for") as refused:
        DurableJournal(OsDisk(), str(raft))
    assert not isinstance(refused.value, UnreadableFeatures)


async def test_the_node_exits_2_with_one_line_and_reset_features_repairs_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raft, config, term = await _damaged(tmp_path)
    log_before = (raft / "journal.log").read_bytes()
    node = NodeProc(config)
    assert node.wait_exit() == 2
    err = node.stderr().strip()
    assert "\n" not in err and "Traceback" not in err, err
    assert err.startswith("error: ") and "'features'" in err and "--reset-features" in err
    assert main(["rejoin", "--config", str(config)]) == 2  # the wipe is not needed
    assert "--reset-features" in capsys.readouterr().err
    assert main(["rejoin", "--config", str(config), "--reset-features"]) == 0
    assert "term and vote are kept" in capsys.readouterr().out
    assert (raft / "journal.log").read_bytes() == log_before
    for copy in sorted(raft.glob("journal.meta*")):
        meta = decode_meta(copy.read_bytes())[0]
        assert meta["term"] == term and "features" not in meta
    assert main(["rejoin", "--config", str(config), "--reset-features"]) == 2
    assert "nothing to reset" in capsys.readouterr().err
    again = Node(1, data_dir=raft.parent, network=LocalHub().network("1"), cluster="test",
                 durability="none")
    await again.start()
    await again.wait_for_leader()
    await again.barrier()
    assert again.queue("q").len() == 5
    await again.stop()
    assert decode_meta((raft / "journal.meta").read_bytes())[0]["features"]
