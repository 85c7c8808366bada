"""A node made with a wrong setting raises at construction, naming the setting and
quoting the value briefly; nothing starts."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from lazily_queue.errors import InvalidConfiguration
from lazily_queue.node import Node
from lazily_queue.raft.errors import StorageUnavailable

LONG = "x" * 5000
BIG = 10 ** 400


@pytest.mark.parametrize(
    ("setting", "value", "message"),
    [
        ("cluster", object(), r"cluster must be a non-empty str, not <object object"),
        ("cluster", "", r"cluster must be a non-empty str, not ''"),
        ("peers", True, r"peers must be a mapping of node id to address, not True"),
        ("op_timeout", BIG, r"op_timeout must be a number of seconds above 0 and at most "
                            r"1e\+09, not an int of 1329 bits"),
        ("tick_interval", math.nan, r"tick_interval must be .*, not nan"),
        ("tick_interval", 0, r"tick_interval must be a number of seconds above 0"),
        ("disk_retry", "1", r"disk_retry must be .*, not '1'"),
        ("topic_gc_interval", -1, r"topic_gc_interval must be .*, not -1"),
        ("maintenance_interval", math.inf, r"maintenance_interval must be .* or None, not inf"),
        ("maintenance_interval", LONG, r"maintenance_interval must be .* not 'xxx.*\.\.\.x"),
        ("engine", True, r"engine must be a EngineConfig or None, not True"),
        ("clients", [], r"clients must be a ClientAccess or None, not \[\]"),
        ("context", 1, r"context must be a Context or None, not 1"),
        ("dedup", {}, r"dedup must be a DedupLimits or None, not \{\}"),
        ("durability", LONG, r"durability must be 'fsync' \(default\) or 'none', not 'xxx"),
        ("max_message_bytes", LONG, r"max_message_bytes must be an int from 1024"),
        ("data_dir", "", r"data_dir must be a directory's path, not ''"),
        ("data_dir", 7, r"data_dir must be a directory's path, not 7"),
    ],
)
def test_a_wrong_setting_is_named_at_construction(
    tmp_path: Path, setting: str, value: Any, message: str
) -> None:
    settings: dict[str, Any] = {"data_dir": tmp_path, setting: value}
    with pytest.raises(InvalidConfiguration, match=message) as info:
        Node(1, listen=f"unix://{tmp_path}/n.sock", secret="s" * 32, **settings)
    assert len(str(info.value)) < 300
    assert not (tmp_path / "raft").exists()


def test_a_node_id_or_data_dir_too_long_is_quoted_briefly(tmp_path: Path) -> None:
    with pytest.raises(InvalidConfiguration, match=r"node id 'xxx.*\.\.\.x.* is not an "
                                                   r"integer") as info:
        Node(LONG, data_dir=tmp_path, listen="unix:///tmp/x.sock", secret=b"s",
             durability="none")._default_network()
    assert len(str(info.value)) < 300


async def test_a_data_dir_path_too_long_names_the_fix(tmp_path: Path) -> None:
    node = Node(1, data_dir=tmp_path / LONG, listen=f"unix://{tmp_path}/n.sock",
                secret="s" * 32)
    with pytest.raises(StorageUnavailable, match=r"File name too long .*; choose a data_dir "
                                                 r"with a shorter path") as info:
        await node.start()
    assert len(str(info.value)) < 600
