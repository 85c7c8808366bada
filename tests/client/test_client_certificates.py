"""Clients proving their name by a TLS client certificate instead of a token."""

from __future__ import annotations

import shutil
import ssl
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.x509.oid import NameOID
from lazily_transports import HandshakeError, LinkConfig, PeerRejectedError, dial

from lazily_queue import (
    AccessDenied,
    CertificateCredentials,
    ClientAccess,
    ClientGrant,
    Credentials,
    InvalidConfiguration,
    Node,
    PermissionDenied,
    connect,
)
from lazily_queue.client.certificates import normalize_fingerprint, parse_subject
from tests.certs import Issued, TestCA

pytestmark = pytest.mark.timeout(60)


@dataclass
class PKI:
    members: TestCA
    clients: TestCA
    member: Issued
    directory: Path

    def client(self, name: str, issued: Issued | None = None) -> CertificateCredentials:
        issued = issued or self.clients.issue(name)
        return CertificateCredentials(name, issued.certificate, issued.key, self.members.path)

    def server(self, *, required: bool = True) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.member.certificate, self.member.key)
        context.load_verify_locations(self.clients.path)
        context.verify_mode = ssl.CERT_REQUIRED if required else ssl.CERT_OPTIONAL
        return context


@pytest.fixture
def pki() -> Iterator[PKI]:
    directory = Path(tempfile.mkdtemp(prefix="lqc-", dir="/tmp"))
    members = TestCA(directory / "members", "members CA")
    yield PKI(members, TestCA(directory / "clients", "clients CA"), members.issue("n1"),
              directory)
    shutil.rmtree(directory, ignore_errors=True)


def _node(pki: PKI, grants: list[ClientGrant], *, required: bool = True,
          extra: tuple[str, ...] = ()) -> Node:
    access = ClientAccess(grants, listen=["tls://127.0.0.1:0", *extra],
                          ssl_context=pki.server(required=required))
    return Node(1, data_dir=None, durability="none", listen=f"unix://{pki.directory}/n.sock",
                secret=b"cluster-secret", clients=access)


def _address(node: Node) -> str:
    assert node.clients is not None
    return node.clients.addresses[0]


@pytest.mark.parametrize("scheme", ["tls", "wss"])
async def test_a_client_proves_its_name_by_its_certificate_and_keeps_its_permissions(
        pki: PKI, scheme: str) -> None:
    grants = [ClientGrant("web", certificate_subject="CN=web", produce=["jobs"],
                          consume=["jobs"])]
    listen = "tls://127.0.0.1:0" if scheme == "tls" else "wss://127.0.0.1:0/clients"
    access = ClientAccess(grants, listen=[listen], ssl_context=pki.server())
    async with Node(1, data_dir=None, durability="none", secret=b"cluster-secret",
                    listen=f"unix://{pki.directory}/n.sock", clients=access) as member:
        await member.wait_for_leader()
        async with connect(_address(member), pki.client("web")) as client:
            await client.queue("jobs").push("resize")
            with pytest.raises(PermissionDenied, match="its certificate lacks the produce"):
                await client.queue("billing").push("nope")
            assert await client.queue("jobs").pop() == "resize"
        assert member.view.queue("billing") is None  # nothing of the refused push applied


@pytest.mark.parametrize("case", ["expired", "other CA", "another client's", "unknown name",
                                  "a token client's name"])
async def test_a_certificate_that_is_not_the_clients_is_denied_and_nothing_applied(
        pki: PKI, case: str) -> None:
    other = TestCA(pki.directory / "other", "someone else's CA")
    make = {
        "expired": lambda: pki.client("web", pki.clients.issue("web", expired=True)),
        "other CA": lambda: pki.client("web", other.issue("web")),
        "another client's": lambda: pki.client("ops", pki.clients.issue("web")),
        "unknown name": lambda: pki.client("nobody"),
        "a token client's name": lambda: pki.client("tok"),
    }[case]
    credentials = make()
    expected = {
        "expired": "expired on",
        "other CA": "must be signed by the CA.*one of `clients`, not `listen`",
        "another client's": "subject 'CN=web'.* is not client 'ops'",
        "unknown name": "unknown client credential 'nobody'",
        "a token client's name": "authenticates with its token",
    }[case]
    grants = [ClientGrant("web", certificate_subject="CN=web", produce=["*"]),
              ClientGrant("ops", certificate_subject="CN=ops", produce=["*"]),
              ClientGrant("tok", b"a-token-of-tok", produce=["*"])]
    async with _node(pki, grants) as node:
        await node.wait_for_leader()
        with pytest.raises(AccessDenied, match=expected):
            await connect(_address(node), credentials, connect_timeout=5).start()
        assert node.clients is not None
        assert node.clients.stats()["requests"] == node.clients.stats()["connections"] == 0


async def test_a_pinned_fingerprint_admits_that_certificate_only(pki: PKI) -> None:
    pinned = pki.clients.issue("web")
    fingerprint = x509.load_pem_x509_certificate(pinned.certificate.read_bytes()).fingerprint(
        hashes.SHA256()).hex(":")
    grants = [ClientGrant("web", certificate_fingerprints=[fingerprint.upper()],
                          produce=["*"])]
    async with _node(pki, grants) as node:
        await node.wait_for_leader()
        async with connect(_address(node), pki.client("web", pinned)) as client:
            await client.queue("q").push(1)
        renewed = pki.clients.issue("web")  # same subject, another key: not pinned
        with pytest.raises(AccessDenied, match="is not one of client 'web'"):
            await connect(_address(node), pki.client("web", renewed), connect_timeout=5).start()


async def test_a_subject_matches_attribute_by_attribute_in_any_order(pki: PKI) -> None:
    subject = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Orders"),
                         x509.NameAttribute(NameOID.COMMON_NAME, "billing")])
    issued = pki.clients.issue("billing", subject=subject)
    grants = [ClientGrant("billing", certificate_subject="O=Orders, commonName=billing",
                          produce=["invoices"])]
    async with _node(pki, grants) as node:
        await node.wait_for_leader()
        async with connect(_address(node), pki.client("billing", issued)) as client:
            await client.queue("invoices").push(1)
    assert parse_subject("CN=a\\,b,O=x", "t") == (("CN", "a,b"), ("O", "x"))


async def test_a_certificate_is_matched_by_its_subject_alt_names(pki: PKI) -> None:
    """A grant naming subjectAltNames admits a certificate carrying one of them, whatever
    its CN; a certificate with the grant's CN but none of them is refused."""
    spiffe = x509.UniformResourceIdentifier("spiffe://orders/web")
    issued = {
        "uri": pki.clients.issue("pod-7f3a", alt_names=[spiffe]),
        "dns": pki.clients.issue("any", alt_names=[x509.DNSName("Web.Orders.Internal")]),
        "email": pki.clients.issue("mail", alt_names=[x509.RFC822Name("web@Orders.Example")]),
        "cn only": pki.clients.issue("web"),
        "other uri": pki.clients.issue("web-2", alt_names=[
            x509.UniformResourceIdentifier("spiffe://orders/web/admin")]),
        "both": pki.clients.issue("billing", alt_names=[
            x509.DNSName("billing.orders.internal")]),
        "san, other cn": pki.clients.issue("intruder", alt_names=[
            x509.DNSName("billing.orders.internal")]),
    }
    grants = [ClientGrant("web", certificate_alt_names=[
                  "URI:spiffe://orders/web", "dns:web.orders.internal.",
                  "email:web@orders.example"], produce=["jobs"]),
              ClientGrant("billing", certificate_subject="CN=billing",
                          certificate_alt_names=["DNS:billing.orders.internal"],
                          produce=["*"])]
    async with _node(pki, grants) as node:
        await node.wait_for_leader()
        for case in ("uri", "dns", "email"):
            async with connect(_address(node), pki.client("web", issued[case])) as client:
                await client.queue("jobs").push(case)
        async with connect(_address(node), pki.client("billing", issued["both"])) as client:
            await client.queue("invoices").push(1)
        refused = {
            "cn only": ("web", r"carries none of client 'web''s certificate_alt_names \(its "
                               r"subjectAltName: IP Address:127.0.0.1, DNS:localhost\)"),
            "other uri": ("web", r"none of client 'web''s .*URI:spiffe://orders/web/admin\)"),
            "san, other cn": ("billing", r"subject 'CN=intruder'.* is not client 'billing''s"),
        }
        for case, (name, expected) in refused.items():
            with pytest.raises(AccessDenied, match=expected):
                await connect(_address(node), pki.client(name, issued[case]),
                              connect_timeout=5).start()
        jobs = node.view.queue("jobs")
        assert jobs is not None and jobs.elements() == ["uri", "dns", "email"]


async def test_no_certificate_no_link_even_where_certificates_are_optional(pki: PKI) -> None:
    grants = [ClientGrant("web", certificate_subject="CN=web", produce=["*"]),
              ClientGrant("tok", b"a-token-of-tok", produce=["*"])]
    async with _node(pki, grants, required=False, extra=("tcp://127.0.0.1:0",)) as node:
        await node.wait_for_leader()
        assert node.clients is not None
        tls_address, tcp_address = node.clients.addresses
        # a token client needs no certificate where they are optional
        no_certificate = ssl.create_default_context(cafile=str(pki.members.path))
        async with connect(tls_address, Credentials("tok", b"a-token-of-tok"),
                           ssl_context=no_certificate) as client:
            await client.queue("q").push(1)
        # a certificate client without one, over TLS and over plain TCP
        config = LinkConfig(peer_id=0, session_id="lazily-client", secret=None,
                            credential="web")
        for address, context in ((tls_address, no_certificate), (tcp_address, None)):
            with pytest.raises(PeerRejectedError, match="presented none"):
                await dial(address, config, ssl_context=context)


def test_credentials_and_grants_refuse_what_cannot_work(pki: PKI) -> None:
    with pytest.raises(InvalidConfiguration, match="tls:// or wss://"):
        connect("tcp://127.0.0.1:1", pki.client("web"))
    with pytest.raises(InvalidConfiguration, match="either its token or the certificate"):
        ClientGrant("web", b"a-token-of-web", certificate_subject="CN=web")
    with pytest.raises(InvalidConfiguration, match="either its token or the certificate"):
        ClientGrant("web")
    with pytest.raises(InvalidConfiguration, match="not a SHA-256"):
        ClientGrant("web", certificate_fingerprints=["AB:CD"])
    with pytest.raises(InvalidConfiguration, match="attribute=value"):
        ClientGrant("web", certificate_subject="web")
    with pytest.raises(InvalidConfiguration, match="DNS, URI or email"):
        ClientGrant("web", certificate_alt_names=["IP:127.0.0.1"])
    with pytest.raises(InvalidConfiguration, match="either its token or the certificate"):
        ClientGrant("web", b"a-token-of-web", certificate_alt_names="DNS:web")
    assert ClientGrant("web", certificate_alt_names="DNS:web").certificate_alt_names == (
        "DNS:web",)
    with pytest.raises(InvalidConfiguration, match="does not exist"):
        CertificateCredentials("web", pki.directory / "none.pem", pki.member.key).ssl_context()
    assert normalize_fingerprint("sha256 Fingerprint=" + "Ab:" * 31 + "Ab", "t") == "ab" * 32
    assert "token" not in repr(ClientGrant("web", certificate_subject="CN=web"))


async def test_a_member_logs_the_tls_handshakes_it_refuses(
        pki: PKI, caplog: pytest.LogCaptureFixture) -> None:
    other = TestCA(pki.directory / "other", "someone else's CA")
    grants = [ClientGrant("web", certificate_subject="CN=web", produce=["*"])]
    caplog.set_level("WARNING", logger="lazily_transports.tls")
    async with _node(pki, grants) as node:
        await node.wait_for_leader()
        with pytest.raises(AccessDenied):
            await connect(_address(node), pki.client("web", other.issue("web")),
                          connect_timeout=5).start()
        no_certificate = ssl.create_default_context(cafile=str(pki.members.path))
        config = LinkConfig(peer_id=0, session_id="lazily-client", secret=None,
                            credential="web")
        with pytest.raises((PeerRejectedError, HandshakeError, OSError)):
            await dial(_address(node), config, ssl_context=no_certificate)
    refusals = [r.getMessage() for r in caplog.records if r.name == "lazily_transports.tls"]
    assert any("its certificate failed verification" in m for m in refusals), refusals
    assert any("presented no certificate" in m for m in refusals), refusals
