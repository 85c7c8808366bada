"""Nodes over tls:// and wss:// with certificates the test generates (in-process and as
``lazily-queue node`` processes), and a member with a certificate of another CA."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from lazily_transports import TLSFiles

from lazily_queue.errors import InvalidConfiguration
from lazily_queue.node import Node
from tests.certs import TestCA
from tests.cli.node_procs import NodeProc, wait_for, write_config


def free_ports(n: int) -> list[int]:
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def _address(scheme: str, port: int) -> str:
    return f"{scheme}://127.0.0.1:{port}" + ("/raft" if scheme == "wss" else "")


@pytest.mark.parametrize("scheme", ["tls", "wss"])
async def test_a_cluster_over_tls(tmp_path: Path, scheme: str) -> None:
    ca = TestCA(tmp_path / "certs")
    peers = {i: _address(scheme, port) for i, port in zip((1, 2, 3), free_ports(3),
                                                           strict=True)}
    nodes = []
    for i in (1, 2, 3):
        issued = ca.issue(f"n{i}")
        nodes.append(Node(i, data_dir=tmp_path / str(i), peers=peers, secret=b"s",
                          durability="none",
                          tls=TLSFiles(issued.certificate, issued.key, issued.ca)))
    for node in nodes:
        await node.start()
    try:
        await nodes[0].wait_for_leader(timeout=15)
        q = nodes[2].queue("q")
        for i in range(10):
            await q.push(i)
        await nodes[1].barrier()
        assert nodes[1].queue("q").len() == 10
        mesh = nodes[0].driver.network.mesh  # type: ignore[attr-defined]
        assert mesh.listen_address.startswith(f"{scheme}://127.0.0.1:")
    finally:
        for node in nodes:
            await node.stop()


def test_tls_settings_and_addresses_must_agree(tmp_path: Path) -> None:
    issued = TestCA(tmp_path / "certs").issue("n1")
    tls = TLSFiles(issued.certificate, issued.key, issued.ca)
    with pytest.raises(InvalidConfiguration, match=r"uses TLS: pass tls=TLSFiles"):
        Node(1, data_dir=None, durability="none", listen="wss://127.0.0.1:7001/x", secret=b"s")
    with pytest.raises(InvalidConfiguration, match=r"peer 2 'tcp://127.0.0.1:7002' does not use"):
        Node(1, data_dir=None, durability="none", listen="tls://127.0.0.1:7001", secret=b"s",
             peers={2: "tcp://127.0.0.1:7002"}, tls=tls)


def _tls_table(issued_dir: Path, name: str, ca: Path) -> str:
    return (f'[tls]\ncertificate = "{issued_dir / (name + ".pem")}"\n'
            f'key = "{issued_dir / (name + ".key")}"\nca = "{ca}"\n')


def test_node_processes_over_tls_and_a_wrong_ca_is_refused(tmp_path: Path) -> None:
    ca = TestCA(tmp_path / "certs")
    other = TestCA(tmp_path / "other", name="another CA")
    for i in (1, 2, 3):
        ca.issue(f"n{i}")
    other.issue("n3")  # node 3's certificate by another CA, trusting only that CA
    ports = free_ports(3)
    peers = {i: f"tls://127.0.0.1:{p}" for i, p in zip((1, 2, 3), ports, strict=True)}

    def config(i: int, certs: TestCA, extra: str = "") -> Path:
        path = write_config(tmp_path / f"n{i}{extra}.toml", i, peers,
                            data_dir=f"data{i}{extra}", app="")
        text = path.read_text().replace("[peers]", _tls_table(certs.directory, f"n{i}",
                                                               certs.path) + "[peers]")
        path.write_text(text)
        return path

    procs = [NodeProc(config(1, ca)), NodeProc(config(2, ca))]
    try:
        for p in procs:
            p.wait_ready()
            p.wait_line("leader ")
        wrong = NodeProc(config(3, other, "-wrong"))
        assert wrong.wait_exit(30) == 2
        err = wrong.stderr()
        assert "the TLS link to peer" in err and "not signed by the trusted CA" in err, err
        assert len([line for line in err.splitlines() if line.startswith("error:")]) == 1
        # The same node with a certificate of the cluster's CA joins.
        right = NodeProc(config(3, ca))
        procs.append(right)
        right.wait_ready()
        wait_for(lambda: all(m["reachable"] for m in procs[0].status()["members"]),
                 timeout=30, what="node 3 linked over TLS")
    finally:
        for p in procs:
            p.terminate()
