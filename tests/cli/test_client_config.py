"""``[[client]]`` tables and the `clients` address of a node configuration."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from lazily_queue.config import ConfigError, load_config, parse_config

BASE = {"id": 1, "data_dir": "data", "listen": "tcp://127.0.0.1:7001", "secret_env": "S",
        "peers": {"2": "tcp://127.0.0.1:7002"}}
WEB = {"name": "web", "token_env": "WEB_TOKEN", "produce": ["jobs"], "consume": ["jobs"]}


def test_clients_and_their_tokens_from_env_and_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "node.toml").write_text(
        'id = 1\ndata_dir = "d"\nlisten = "unix:n1.sock"\nsecret_env = "S"\n'
        'clients = "unix:c1.sock"\n'
        '[[client]]\nname = "web"\ntoken_env = "WEB_TOKEN"\nproduce = ["jobs", "orders.*"]\n'
        'consume = ["jobs"]\n'
        '[[client]]\nname = "ops"\ntoken_file = "ops.token"\nadmin = ["*"]\n')
    (tmp_path / "ops.token").write_text("  ops-token-from-a-file\n")
    monkeypatch.setenv("WEB_TOKEN", "web-token-from-the-env")
    config = load_config(tmp_path / "node.toml")
    assert config.clients_listen == ("unix:c1.sock",)
    access = config.client_access()
    assert access is not None and access.listen == ("unix:c1.sock",)
    assert access.token("web") == b"web-token-from-the-env"
    assert access.token("ops") == b"ops-token-from-a-file"
    assert access.token("nobody") is None
    web = access.grants["web"]
    assert web.refusal(2, "orders.eu") is None  # queue_push
    assert web.refusal(3, "orders.eu") is not None  # queue_pop
    assert access.grants["ops"].refusal(35, "anything") is None  # work_reap


def test_without_clients_a_node_serves_none(tmp_path: Path) -> None:
    config = parse_config(dict(BASE), base=tmp_path, source="node.toml")
    assert config.clients == () and config.client_access() is None


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"client": [{**WEB, "token_file": "t"}]}, r"exactly one of `token_env`"),
        ({"client": [{"name": "web", "token": "inline"}]}, r"unknown key\(s\) token"),
        ({"client": [WEB, WEB]}, r"'web' is listed twice"),
        ({"client": [{**WEB, "produce": "jobs"}]}, r"`produce` is a list of name patterns"),
        ({"client": {"name": "web"}}, r"\[\[client\]\] tables"),
        ({"clients": "unix:c.sock"}, r"no \[\[client\]\] is listed"),
        ({"clients": [WEB]}, r"go in a \[\[client\]\] table \(singular\)"),  # [[clients]]
        ({"clients": WEB}, r"go in a \[\[client\]\] table \(singular\)"),  # [clients]
        ({"clients": "tcp://127.0.0.1:7001", "client": [WEB]}, r"must differ"),
        ({"clients": "unix:///no/such/dir/c.sock", "client": [WEB]}, r"does not exist"),
        ({"clients": ["tcp://127.0.0.1:0", 7], "client": [WEB]}, r"non-empty string"),
    ],
)
def test_client_mistakes_name_the_key_and_the_fix(
    tmp_path: Path, changes: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config({**BASE, **changes}, base=tmp_path, source="node.toml")


def test_a_missing_token_is_reported_when_the_node_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("WEB_TOKEN", raising=False)
    config = parse_config({**BASE, "client": [WEB]}, base=tmp_path, source="node.toml")
    with pytest.raises(ConfigError, match="WEB_TOKEN is not set"):
        config.client_access()
    monkeypatch.setenv("WEB_TOKEN", "short")
    with pytest.raises(ConfigError, match="at least 8 bytes"):
        config.client_access()


def _tls(tmp_path: Path) -> dict[str, object]:
    from tests.certs import TestCA

    members = TestCA(tmp_path / "members", "members CA")
    issued = members.issue("n1")
    TestCA(tmp_path / "clients", "clients CA")
    return {"certificate": str(issued.certificate), "key": str(issued.key),
            "ca": str(members.path)}


BILLING = {"name": "billing", "certificate_subject": "CN=billing,O=Orders",
           "produce": ["invoices"]}
TLS_BASE = {**BASE, "listen": "tls://127.0.0.1:7001", "peers": {"2": "tls://127.0.0.1:7002"}}


def test_certificate_clients_and_their_ca(tmp_path: Path) -> None:
    tls = _tls(tmp_path)
    config = parse_config(
        {**TLS_BASE, "tls": tls, "clients": "tls://127.0.0.1:0", "clients_ca": "clients/ca.pem",
         "client": [BILLING, {"name": "pinned", "certificate_fingerprints": "AB:" * 31 + "AB",
                              "consume": ["*"]},
                    {"name": "mesh", "certificate_alt_names": [
                        "URI:spiffe://orders/web", "dns:Web.Orders.Internal."]}]},
        base=tmp_path, source="node.toml")
    assert config.clients_ca == tmp_path / "clients" / "ca.pem"
    access = config.client_access()
    assert access is not None and access.ssl_context is not None
    assert access.ssl_context.verify_mode == ssl.CERT_REQUIRED
    assert [c["subject"] for c in access.ssl_context.get_ca_certs()] == [
        ((("commonName", "clients CA"),),)]  # clients_ca, not the members' CA
    assert callable(access.credential("billing")) and access.token("billing") is None
    assert access.grants["pinned"].certificate_fingerprints == ("ab" * 32,)
    assert access.grants["mesh"]._alt_names == {("URI", "spiffe://orders/web"),
                                                ("DNS", "web.orders.internal")}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"client": [{**BILLING, "token_env": "T"}]}, r"exactly one of `token_env`"),
        ({"client": [{**BILLING, "certificate_subject": "billing"}]}, r"attribute=value"),
        ({"client": [{**BILLING, "certificate_fingerprints": ["AB"]}]}, r"not a SHA-256"),
        ({"client": [{**BILLING, "certificate_alt_names": ["web.orders"]}]},
         r"entry 'web.orders' is not like \"DNS:"),
        ({"client": [{**BILLING, "certificate_alt_names": ["IP:10.0.0.1"]}]},
         r"a type, DNS, URI or email"),
        ({"client": [{**BILLING, "certificate_alt_names": ["DNS:*.orders"]}]},
         r"wildcards do not name one client"),
        ({"client": [{**BILLING, "certificate_alt_names": [3]}]},
         r"`certificate_alt_names` is a list of subjectAltNames"),
        ({"client": [{"name": "x", "certificate_alt_names": ["DNS:x"], "token_env": "T"}]},
         r"exactly one of `token_env`"),
        ({"client": [BILLING], "clients": "tcp://127.0.0.1:0"}, r"serve clients on a tls://"),
        ({"client": [BILLING], "tls": None}, r"serve clients on a tls://"),
        ({"client": [WEB], "clients_ca": "clients/ca.pem", "clients": None},
         r"address of the clients' own"),
        ({"client": [BILLING], "clients_ca": "nope.pem"}, r"not a readable PEM"),
        ({"client": [BILLING], "tls": "no-ca"}, r"give `clients_ca`"),
    ],
)
def test_certificate_client_mistakes_name_the_key_and_the_fix(
    tmp_path: Path, changes: dict[str, object], message: str
) -> None:
    tls = _tls(tmp_path)
    doc: dict[str, object] = {**TLS_BASE, "tls": tls, "clients": "tls://127.0.0.1:0", **changes}
    if doc["tls"] == "no-ca":
        doc["tls"] = {k: v for k, v in tls.items() if k != "ca"}
    for key in ("tls", "clients"):
        if doc[key] is None:
            del doc[key]
    if "tls" not in doc:
        doc.update(listen=BASE["listen"], peers=BASE["peers"])
    with pytest.raises(ConfigError, match=message):
        parse_config(doc, base=tmp_path, source="node.toml")


@pytest.mark.parametrize("address", ["ws://127.0.0.1:7311", "tcp://127.0.0.1:7311"])
def test_with_tls_a_plain_clients_address_is_refused(tmp_path: Path, address: str) -> None:
    doc = {**TLS_BASE, "tls": _tls(tmp_path), "client": [WEB],
           "clients": ["wss://127.0.0.1:7312", address]}
    with pytest.raises(ConfigError, match=(
            rf"node.toml: `clients` address '{address}' does not use TLS but \[tls\] is set "
            r".*: use wss:// or tls:// \(served with the \[tls\] certificate\), or unix: for "
            r"clients on this host")):
        parse_config(doc, base=tmp_path, source="node.toml")


def test_with_tls_clients_may_use_tls_addresses_or_a_unix_socket(tmp_path: Path) -> None:
    doc = {**TLS_BASE, "tls": _tls(tmp_path), "client": [WEB],
           "clients": ["wss://127.0.0.1:7312", "tls://127.0.0.1:7313", "unix:c1.sock"]}
    config = parse_config(doc, base=tmp_path, source="node.toml")
    assert config.clients_listen == ("wss://127.0.0.1:7312", "tls://127.0.0.1:7313",
                                     "unix:c1.sock")
