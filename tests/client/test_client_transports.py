"""Clients over every transport a member listens on: unix:, tcp://, ws:// and wss://."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import time
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from lazily_queue import AccessDenied, ClientAccess, ClientGrant, Node, Unreachable, connect

pytestmark = pytest.mark.timeout(60)

TOKEN = b"token-of-the-web-tier"


def _contexts(directory: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A self-signed certificate for 127.0.0.1: (server context, client context)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "lazily-client-test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert_path, key_path)
    return server, ssl.create_default_context(cafile=str(cert_path))


async def test_one_member_serves_clients_on_unix_tcp_ws_and_wss(short_tmp: Path) -> None:
    server_tls, client_tls = _contexts(short_tmp)
    access = ClientAccess(
        [ClientGrant("web", TOKEN, produce=["*"], consume=["*"])],
        listen=[f"unix://{short_tmp}/c.sock", "tcp://127.0.0.1:0", "ws://127.0.0.1:0/clients",
                "wss://127.0.0.1:0/clients"],
        ssl_context=server_tls)
    node = Node(1, data_dir=None, durability="none", listen=f"unix://{short_tmp}/n.sock",
                secret=b"cluster-secret", clients=access)
    async with node:
        await node.wait_for_leader()
        assert node.clients is not None
        addresses = node.clients.addresses
        assert [a.split(":")[0] for a in addresses] == ["unix", "tcp", "ws", "wss"]
        for n, address in enumerate(addresses):
            tls = client_tls if address.startswith("wss:") else None
            async with connect(address, ("web", TOKEN), ssl_context=tls) as client:
                await client.queue("q").push(n)
        async with connect(addresses[1], ("web", TOKEN)) as client:
            assert await client.queue("q").pop_many(10) == [0, 1, 2, 3]
        # the Raft address serves no client when clients have addresses of their own
        assert node.listen is not None
        with pytest.raises(AccessDenied, match="does not accept clients") as refused:
            await connect(node.listen, ("web", TOKEN), connect_timeout=2).start()
        assert str(refused.value).endswith(
            f"): {node.listen} takes no clients: a member takes them at its `clients` "
            "address when it has one, else at its listen address once it lists [[client]] "
            "tables (Node(clients=...)); dial that address"), refused.value


async def test_a_member_certificate_the_client_does_not_trust_fails_at_once(
        short_tmp: Path) -> None:
    server_tls, _trusting = _contexts(short_tmp)
    access = ClientAccess([ClientGrant("web", TOKEN, produce=["*"])],
                          listen=["wss://127.0.0.1:0/clients"], ssl_context=server_tls)
    node = Node(1, data_dir=None, durability="none", listen=f"unix://{short_tmp}/n.sock",
                secret=b"cluster-secret", clients=access)
    async with node:
        await node.wait_for_leader()
        assert node.clients is not None
        untrusting = ssl.create_default_context()  # the system's CAs, not the members'
        began = time.monotonic()
        with pytest.raises(Unreachable, match=r"for good .*certificate of wss://.* was "
                           r"not verified .*must trust the CA"):
            await connect(node.clients.addresses[0], ("web", TOKEN), ssl_context=untrusting,
                          connect_timeout=20).start()
        assert time.monotonic() - began < 5  # not connect_timeout
