"""wss:// links with a caller-supplied SSL context and a self-signed certificate."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import socket
import ssl
from pathlib import Path

import anyio
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from lazily_transports import (
    HandshakeError,
    LinkStream,
    TLSConfigError,
    TLSFiles,
    describe_tls_error,
    dial,
    listen,
)
from lazily_transports._core._tls_admission import admits_before_tls
from transport_helpers import channel_pair, make_config

from tests.certs import Issued, TestCA

pytestmark = pytest.mark.timeout(30)


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "lazily-test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    directory = tmp_path_factory.mktemp("tls")
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


@pytest.fixture
def server_context(certificate: tuple[Path, Path]) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    return context


@pytest.fixture
def client_context(certificate: tuple[Path, Path]) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(certificate[0]))
    assert context.check_hostname
    return context


async def test_wss_round_trip_with_verified_certificate(
    server_context: ssl.SSLContext, client_context: ssl.SSLContext
) -> None:
    async with channel_pair(
        "wss://127.0.0.1:0/secure", ssl_context=server_context, client_ssl=client_context
    ) as (client, server):
        assert client.channel.scheme == "wss"
        await client.send(b"encrypted" * 1000)
        assert await server.receive() == b"encrypted" * 1000
        await server.send(b"reply")
        assert await client.receive() == b"reply"


async def test_wss_rejects_an_untrusted_certificate(server_context: ssl.SSLContext) -> None:
    async def handler(channel: object) -> None:
        raise AssertionError("no link should be accepted")

    async with listen(
        "wss://127.0.0.1:0/secure", make_config(2), handler, ssl_context=server_context
    ) as listener:
        with pytest.raises(ssl.SSLError):
            await dial(listener.address, make_config(1), ssl_context=ssl.create_default_context())


async def test_tls_arguments_are_checked() -> None:
    async def handler(channel: object) -> None:
        pass

    with pytest.raises(ValueError, match="needs a server ssl_context"):
        async with listen("wss://127.0.0.1:0/x", make_config(2), handler):
            pass
    with pytest.raises(ValueError, match="plain ws://"):
        await dial("ws://127.0.0.1:9/x", make_config(1), ssl_context=ssl.create_default_context())
    with pytest.raises(ValueError, match="do not use TLS"):
        await dial("tcp://127.0.0.1:9", make_config(1), ssl_context=ssl.create_default_context())


# -- tls:// (TCP with TLS) and TLSFiles ----------------------------------------------------

@pytest.fixture(scope="module")
def authority(tmp_path_factory: pytest.TempPathFactory) -> TestCA:
    return TestCA(tmp_path_factory.mktemp("ca"))


def _files(issued: Issued, **options: bool) -> TLSFiles:
    return TLSFiles(issued.certificate, issued.key, issued.ca, **options)


@pytest.mark.parametrize("scheme", ["tls://127.0.0.1:0", "wss://127.0.0.1:0/secure"])
async def test_mutually_verified_links_with_files(authority: TestCA, scheme: str) -> None:
    server, client = _files(authority.issue("n2")), _files(authority.issue("n1"))
    async with channel_pair(scheme, ssl_context=server.server_context(),
                            client_ssl=client.client_context()) as (a, b):
        assert a.channel.scheme == scheme.split(":")[0]
        await a.send(b"over tls" * 500)
        assert await b.receive() == b"over tls" * 500


async def test_a_certificate_of_another_ca_is_refused_with_a_clear_error(
    authority: TestCA, tmp_path: Path
) -> None:
    stranger = TestCA(tmp_path / "other", name="another CA")
    server = _files(authority.issue("n2"))

    async def handler(channel: object) -> None:
        raise AssertionError("no link should be accepted")

    async with listen("tls://127.0.0.1:0", make_config(2), handler,
                      ssl_context=server.server_context()) as listener:
        # The dialer trusts another CA: it refuses the listener's certificate.
        wrong_ca = TLSFiles(*_paths(stranger.issue("n1")))
        with pytest.raises(ssl.SSLCertVerificationError) as refused:
            await dial(listener.address, make_config(1), ssl_context=wrong_ca.client_context())
        text = describe_tls_error(refused.value) or ""
        assert text.startswith("the peer's TLS certificate is not signed by the trusted CA (")
        assert text.endswith("); give every node a certificate signed by the CA in the "
                             "others' `ca`")
        # The dialer's own certificate is of another CA: the listener refuses it.
        foreign = stranger.issue("n3")
        mixed = TLSFiles(foreign.certificate, foreign.key, authority.path)
        with pytest.raises((ssl.SSLError, ConnectionError, HandshakeError)) as refused_too:
            channel = await dial(listener.address, make_config(3),
                                 ssl_context=mixed.client_context())
            await channel.receive()
        if isinstance(refused_too.value, ssl.SSLError):
            assert "peer refused this node's TLS certificate" in (
                describe_tls_error(refused_too.value) or "")
        # No client certificate at all: refused too.
        bare = ssl.create_default_context(cafile=str(authority.path))
        with pytest.raises((ssl.SSLError, ConnectionError, HandshakeError)):
            channel = await dial(listener.address, make_config(4), ssl_context=bare)
            await channel.receive()


def _paths(issued: Issued) -> tuple[Path, Path, Path]:
    return issued.certificate, issued.key, issued.ca


async def test_tls_needs_its_contexts_and_files_are_checked(
    authority: TestCA, tmp_path: Path
) -> None:
    async def handler(channel: object) -> None:
        pass

    with pytest.raises(ValueError, match="tls:// links need a server ssl_context"):
        async with listen("tls://127.0.0.1:0", make_config(2), handler):
            pass
    with pytest.raises(ValueError, match="tls:// links need a client ssl_context"):
        await dial("tls://127.0.0.1:9", make_config(1))
    issued = authority.issue("n5")
    with pytest.raises(TLSConfigError, match=r"TLS key file .*missing.key does not exist"):
        TLSFiles(issued.certificate, tmp_path / "missing.key", issued.ca).server_context()
    other = authority.issue("n6")
    with pytest.raises(TLSConfigError, match="cannot be used together"):
        TLSFiles(issued.certificate, other.key, issued.ca).client_context()
    (tmp_path / "junk.pem").write_text("not a certificate\n")
    with pytest.raises(TLSConfigError, match="holds no usable PEM certificate"):
        TLSFiles(issued.certificate, issued.key, tmp_path / "junk.pem").client_context()


def _refused_handshake() -> None:
    """One server-side TLS handshake that fails (the listener has no certificate)."""
    from lazily_transports.tls import report_refusals

    server = report_refusals(ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER))
    client = ssl.create_default_context()
    c_in, c_out, s_in, s_out = (ssl.MemoryBIO() for _ in range(4))
    dialer = client.wrap_bio(c_in, c_out, server_hostname="node")
    listener = server.wrap_bio(s_in, s_out, server_side=True)
    with pytest.raises(ssl.SSLWantReadError):
        dialer.do_handshake()
    s_in.write(c_out.read())
    with pytest.raises(ssl.SSLError):
        listener.do_handshake()


def test_refused_handshakes_are_logged_at_a_bounded_rate(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    from lazily_transports import tls
    from lazily_transports._core._admission import LogLimiter

    now = [0.0]
    monkeypatch.setattr(tls, "_refusals", LogLimiter(burst=2, interval=10, clock=lambda: now[0]))
    caplog.set_level("WARNING", logger="lazily_transports.tls")
    for _ in range(5):
        _refused_handshake()
    now[0] = 11.0
    _refused_handshake()
    lines = [r.getMessage() for r in caplog.records if r.name == "lazily_transports.tls"]
    assert len(lines) == 4, lines
    assert all(line.startswith("refused a TLS connection: ") for line in lines[:2]), lines
    assert lines[2] == "3 more refused TLS connections were not logged"


@pytest.mark.parametrize("address", ["tls://127.0.0.1:0", "wss://127.0.0.1:0/secure"])
async def test_connections_in_their_tls_handshake_are_capped_per_source(
    address: str, server_context: ssl.SSLContext, client_context: ssl.SSLContext
) -> None:
    if not admits_before_tls():
        pytest.skip("this loop admits TLS connections once their handshake is over")

    async def handler(stream: LinkStream) -> None:
        await stream.aclose()

    config = make_config(2, max_pending_per_source=2, handshake_timeout=30.0)
    async with listen(address, config, handler, ssl_context=server_context) as listener:
        host, _, port = listener.address.split("://", 1)[1].split("/", 1)[0].rpartition(":")
        loop = asyncio.get_running_loop()
        held = []
        for _ in range(2):  # connected, and never a ClientHello
            sock = socket.socket()
            sock.setblocking(False)
            await loop.sock_connect(sock, (host, int(port)))
            held.append(sock)
        over = socket.socket()
        over.setblocking(False)
        await loop.sock_connect(over, (host, int(port)))
        with anyio.fail_after(5):  # closed at once, not after the 30 s handshake timeout
            while await loop.sock_recv(over, 4096):
                pass
        over.close()
        gate = getattr(listener, "handshakes", None) or getattr(listener, "upgrades", None)
        assert gate is not None and gate.refused == 1 and gate.pending == 2
        for sock in held:
            sock.close()
        with anyio.fail_after(5):
            while gate.pending:  # noqa: ASYNC110 - polls plain state
                await anyio.sleep(0.01)
        link = await dial(listener.address, make_config(1), ssl_context=client_context)
        await link.aclose()


@pytest.mark.parametrize("address", ["tls://127.0.0.1:0", "wss://127.0.0.1:0/secure"])
async def test_connections_holding_every_tls_slot_make_room_for_a_member(
    address: str, server_context: ssl.SSLContext, client_context: ssl.SSLContext
) -> None:
    """Every slot held by connections of one address that never send a ClientHello: a
    member dialing from another address takes the place of the oldest of them."""
    if not admits_before_tls():
        pytest.skip("this loop admits TLS connections once their handshake is over")

    async def handler(stream: LinkStream) -> None:
        await stream.aclose()

    config = make_config(2, max_pending_handshakes=3, handshake_timeout=30.0)
    async with listen(address, config, handler, ssl_context=server_context) as listener:
        host, _, port = listener.address.split("://", 1)[1].split("/", 1)[0].rpartition(":")
        loop = asyncio.get_running_loop()
        held = []
        for _ in range(3):
            sock = socket.socket()
            sock.bind(("127.0.0.2", 0))
            sock.setblocking(False)
            await loop.sock_connect(sock, (host, int(port)))
            held.append(sock)
        gate = getattr(listener, "handshakes", None) or getattr(listener, "upgrades", None)
        assert gate is not None
        with anyio.fail_after(5):
            while gate.pending < 3:  # noqa: ASYNC110 - polls plain state
                await anyio.sleep(0.01)
        link = await dial(listener.address, make_config(1), ssl_context=client_context)
        await link.aclose()
        with anyio.fail_after(5):  # the oldest was closed for it
            while await loop.sock_recv(held[0], 4096):
                pass
        assert gate.evicted == 1 and gate.refused == 0
        for sock in held:
            sock.close()
