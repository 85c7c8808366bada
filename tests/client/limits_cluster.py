"""What the tests of the member-side limits share: a cluster serving one client with
its members' caps set, and the check that a cap is a node option and a TOML key."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from lazily_queue import ClientAccess, ClientGrant, InvalidConfiguration, Node, testing
from lazily_queue.config import ConfigError, load_config
from tests.client.test_client_cluster import TOKEN

_clusters = itertools.count()


@asynccontextmanager
async def limited_cluster(size: int, *, produce: bool, **caps: int) -> AsyncIterator[
        tuple[testing.Cluster, list[str]]]:
    """A cluster serving client ``web`` (consume on ``*``, and produce with ``produce``)
    on each member, each member given the node options ``caps`` (``max_objects=3``...);
    yields it and the members' client addresses."""
    prefix = f"memory://limits-{next(_clusters)}"

    def options(node_id: str) -> testing.NodeOptions:
        grant = ClientGrant("web", TOKEN, produce=["*"] if produce else [], consume=["*"])
        found: dict[str, Any] = {"clients": ClientAccess([grant],
                                                         listen=f"{prefix}-{node_id}")}
        found.update(caps)
        return found  # type: ignore[return-value]

    async with testing.cluster(size, node_options=options) as c:
        yield c, [f"{prefix}-{i}" for i in range(1, size + 1)]


def check_cap_setting(key: str, default: int, tmp_path: Path,
                      monkeypatch: pytest.MonkeyPatch) -> None:
    """``key`` is a ``Node`` option (``default`` when not given, refused below 1 or not an
    int) and a key of the node's TOML that reaches the node."""
    def node(**options: Any) -> Any:
        return getattr(Node(1, data_dir=None, durability="none", **options), key)

    assert node() == default
    assert node(**{key: 7}) == 7
    for bad in (0, -1, True, "10"):
        with pytest.raises(InvalidConfiguration, match=key):
            node(**{key: bad})
    config = tmp_path / "node.toml"
    base = (f'id = 1\ndata_dir = "data"\nlisten = "unix:///tmp/lq-{key}.sock"\n'
            'secret_env = "LQ_SECRET"\n[peers]\n')

    def loaded(extra: str) -> Any:
        config.write_text(extra + base)
        return load_config(config)

    assert getattr(loaded(""), key) == default
    assert getattr(loaded(f"{key} = 500\n"), key) == 500
    monkeypatch.setenv("LQ_SECRET", "a-cluster-secret-of-the-test")
    assert getattr(loaded(f"{key} = 500\n").node(durability="none"), key) == 500
    with pytest.raises(ConfigError, match=key):
        loaded(f"{key} = 0\n")
