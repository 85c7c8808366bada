"""A peer whose host name is not in DNS yet (a StatefulSet's pod, a compose service, named
only once it runs) is accepted when a node's file is read, with one warning, and linked
once the name resolves, without a restart; a `listen` host must resolve (it is bound)."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from lazily_queue.config import ConfigError, NodeConfig, parse_config
from tests.raft.test_tls_nodes import free_ports

from .test_node_config import BASE, parse

LATE = ".lazily-late.test"


class Resolver:
    """``socket.getaddrinfo`` where each name ending in :data:`LATE` fails until it is
    published, then leads to 127.0.0.1; ``refused`` counts the failed lookups."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.published: set[str] = set()
        self.refused: Counter[str] = Counter()
        self.changed = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        self._real = socket.getaddrinfo
        monkeypatch.setattr(socket, "getaddrinfo", self.getaddrinfo)

    def getaddrinfo(self, host: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(host, str) and host.endswith(LATE):
            if host not in self.published:
                self.refused[host] += 1
                self._loop.call_soon_threadsafe(self.changed.set)
                raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
            host = "127.0.0.1"
        return self._real(host, *args, **kwargs)

    async def refusals(self, host: str, count: int) -> None:
        while self.refused[host] < count:
            self.changed.clear()
            await self.changed.wait()


def _config(tmp_path: Path, node_id: int, ports: dict[int, int]) -> NodeConfig:
    peers = {str(i): f"tcp://n{i}{LATE}:{port}" for i, port in ports.items() if i != node_id}
    return parse_config({"id": node_id, "data_dir": f"d{node_id}", "secret_env": "S",
                         "listen": f"tcp://127.0.0.1:{ports[node_id]}", "peers": peers},
                        base=tmp_path, source=f"n{node_id}.toml")


@pytest.mark.parametrize("address", ["tcp://n2.no-such-host.invalid:7002",
                                     "ws://n2.no-such-host.invalid:7002/raft"])
def test_a_peer_host_that_does_not_resolve_is_accepted_with_one_warning(
        tmp_path: Path, address: str, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    config = parse(tmp_path, peers={"2": address, "3": "tcp://127.0.0.1:7003"})
    assert isinstance(config, NodeConfig)
    assert config.peers[2] == address
    [(_host, reason)] = config.unresolved_peers.values()  # the resolver's words, as said here
    assert config.unresolved_peers == {2: ("n2.no-such-host.invalid", reason)} and reason
    monkeypatch.setenv("S", "the-cluster-secret")
    with caplog.at_level(logging.WARNING, logger="lazily_queue.config"):
        config.node(durability="none", data_dir=None)
    [warning] = [r.getMessage() for r in caplog.records if r.name == "lazily_queue.config"]
    assert warning.startswith("node 1: peer 2's host 'n2.no-such-host.invalid' ")
    assert f"does not resolve yet ({reason}); this node keeps trying it with backoff " \
           "and links once the name resolves: if it never links, check the name" in warning


def test_a_listen_host_that_does_not_resolve_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"`listen` address 'tcp://n1.no-such-host.invalid:"
                                          r"7001': host 'n1.no-such-host.invalid' cannot be "
                                          r"resolved"):
        parse(tmp_path, listen="tcp://n1.no-such-host.invalid:7001")


def test_a_peer_host_no_resolver_could_hold_is_still_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"peer 2 address .* cannot be resolved"):
        parse(tmp_path, peers={**BASE["peers"], "2": f"tcp://{'h' * 64}.example:7002"})


async def test_a_peer_name_published_after_start_links_without_a_restart(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    resolver = Resolver(monkeypatch)
    monkeypatch.setenv("S", "the-cluster-secret")
    ports = dict(zip((1, 2), free_ports(2), strict=True))
    configs = [_config(tmp_path, i, ports) for i in (1, 2)]
    assert [{p: h for p, (h, _) in c.unresolved_peers.items()} for c in configs] == [
        {2: f"n2{LATE}"}, {1: f"n1{LATE}"}]
    nodes = [c.node(durability="none", data_dir=None) for c in configs]
    for node in nodes:
        await node.start()
    try:
        mesh = nodes[0].driver.network.mesh  # type: ignore[attr-defined]
        # Node 1 dialled node 2 twice in vain since it started: the first failure is noted.
        await resolver.refusals(f"n2{LATE}", resolver.refused[f"n2{LATE}"] + 2)
        assert not mesh.is_up(2)
        assert mesh.trouble(2) == (f"[Errno {socket.EAI_NONAME}] the host name of "
                                   f"tcp://n2{LATE}:{ports[2]} does not resolve (Name or "
                                   "service not known)")
        resolver.published.update({f"n1{LATE}", f"n2{LATE}"})
        leader = await nodes[0].wait_for_leader(timeout=30)
        assert leader in ("1", "2") and mesh.is_up(2)
    finally:
        for node in nodes:
            await node.stop()


@pytest.mark.parametrize("host", ["10.0.0.256", "10.0.0.1.5", "q2,orders", "q2!orders",
                                  "-q2.orders", "q2..orders", ".".join(["h" * 63] * 4)])
def test_a_peer_host_no_resolver_could_ever_answer_for_is_refused(
        tmp_path: Path, host: str) -> None:
    with pytest.raises(ConfigError, match=r"peer 2 address .* cannot be resolved \((not an? "
                                          r"|encoding with 'idna' codec failed)"):
        parse(tmp_path, peers={**BASE["peers"], "2": f"tcp://{host}:7002"})
