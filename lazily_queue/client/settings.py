"""The ``[[client]]`` tables of a node configuration: who may connect as a client.

::

    [[client]]
    name = "web"
    token_env = "ORDERS_WEB_TOKEN"      # its token, from this variable ...
    # token_file = "web.token"          # ... or this file: exactly one of the two
    # previous_token_env = "ORDERS_WEB_TOKEN_OLD"  # while replacing it: the token being
    # previous_token_file = "web.token.old"        # replaced, accepted too (at most one)
    produce = ["jobs", "orders.*"]      # name patterns (see lazily_queue.client.access)
    consume = ["jobs"]
    admin = []
    max_links = 64                      # links it may hold open to one member at once

A client may prove its name by a TLS client certificate instead of a token, over the
``tls://`` or ``wss://`` addresses of ``clients``::

    clients = ["tls://0.0.0.0:7443"]
    clients_ca = "certs/clients-ca.pem" # the CA client certificates are verified against
                                        # (default: [tls] `ca`)
    [[client]]
    name = "billing"
    certificate_subject = "CN=billing,O=Orders"      # its certificate's subject ...
    # certificate_alt_names = ["DNS:billing.orders.internal", "URI:spiffe://orders/billing"]
    #                                                # ... and/or one of its subjectAltNames
    # certificate_fingerprints = ["AB:CD:...:EF"]    # ... and/or the SHA-256 of each
    produce = ["invoices"]                           # certificate it may use

Tokens are never written in the configuration; they are read when the node is built.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lazily_transports import TLS_SCHEMES, TLSConfigError, TLSFiles, scheme_of

from ..config_transport import refuse_unknown_keys
from ..errors import InvalidConfiguration, shown
from ..names import check_positive
from .frame_budget import DEFAULT_CLIENT_FRAME_BUDGET
from .link_caps import DEFAULT_MAX_CLIENT_LINKS, DEFAULT_MAX_LINKS_PER_CLIENT
from .proposal_window import DEFAULT_COMMIT_TARGET, check_commit_target

if TYPE_CHECKING:
    from .access import ClientAccess

CLIENT_KEYS = frozenset({"name", "token_env", "token_file", "previous_token_env",
                         "previous_token_file", "certificate_subject",
                         "certificate_fingerprints", "certificate_alt_names", "produce",
                         "consume", "admin", "max_links"})

Fail = Callable[[str], Exception]


@dataclass(frozen=True)
class ClientConfig:
    """One ``[[client]]`` table: a name, where its token is (or which certificates are
    its), its permissions."""

    name: str
    token_env: str | None = None
    token_file: Path | None = None
    produce: tuple[str, ...] = ()
    consume: tuple[str, ...] = ()
    admin: tuple[str, ...] = ()
    certificate_subject: str | None = None
    certificate_fingerprints: tuple[str, ...] = ()
    certificate_alt_names: tuple[str, ...] = ()
    max_links: int = DEFAULT_MAX_LINKS_PER_CLIENT
    previous_token_env: str | None = None
    previous_token_file: Path | None = None

    @property
    def by_certificate(self) -> bool:
        """Whether it proves its name by a TLS client certificate."""
        return (self.certificate_subject is not None or bool(self.certificate_fingerprints)
                or bool(self.certificate_alt_names))


def _string(value: Any, fail: Fail, key: str) -> str:
    if not isinstance(value, str) or not value:
        raise fail(f"`{key}` must be a non-empty string, not {shown(value)}")
    return value


def parse_clients(raw: Any, base: Path, fail: Fail) -> tuple[ClientConfig, ...]:
    if not isinstance(raw, list):
        raise fail("clients are [[client]] tables (name, token_env or token_file, produce, "
                   "consume, admin)")
    found: dict[str, ClientConfig] = {}
    for table in raw:
        if not isinstance(table, dict):
            raise fail("every [[client]] is a table")
        refuse_unknown_keys(table, CLIENT_KEYS, "[[client]]", fail)
        name = _string(table.get("name"), fail, "client.name")
        if name in found:
            raise fail(f"[[client]] {shown(name)} is listed twice")
        where = f"[[client]] {shown(name)}"
        token_env, token_file = table.get("token_env"), table.get("token_file")
        subject = table.get("certificate_subject")
        fingerprints = table.get("certificate_fingerprints", [])
        if isinstance(fingerprints, str):
            fingerprints = [fingerprints]
        alt_names = table.get("certificate_alt_names", [])
        if isinstance(alt_names, str):
            alt_names = [alt_names]
        if not isinstance(alt_names, list) or not all(isinstance(a, str) and a
                                                      for a in alt_names):
            raise fail(f"{where}: `certificate_alt_names` is a list of subjectAltNames like "
                       "[\"DNS:billing.orders.internal\", \"URI:spiffe://orders/billing\"]")
        if subject is not None:
            _string(subject, fail, "certificate_subject")
        if not isinstance(fingerprints, list) or not all(
                isinstance(f, str) and f for f in fingerprints):
            raise fail(f"{where}: `certificate_fingerprints` is a list of SHA-256 "
                       "fingerprints like [\"AB:CD:...:EF\"]")
        ways = (token_env is not None) + (token_file is not None) + bool(
            subject is not None or fingerprints or alt_names)
        if ways != 1:
            raise fail(f"{where}: give exactly one of `token_env` (an environment variable "
                       "holding its token), `token_file`, or the TLS client certificate it "
                       "proves its name with (`certificate_subject`, `certificate_alt_names` "
                       "and/or `certificate_fingerprints`); tokens are never written in the "
                       "configuration")
        previous_env = table.get("previous_token_env")
        previous_file = table.get("previous_token_file")
        if previous_env is not None and previous_file is not None:
            raise fail(f"{where}: give at most one of `previous_token_env` and "
                       "`previous_token_file` (the token being replaced)")
        if (previous_env is not None or previous_file is not None) and (
                token_env is None and token_file is None):
            raise fail(f"{where}: `previous_token_env` / `previous_token_file` go with a "
                       "token (`token_env` or `token_file`), not a certificate")
        lists: dict[str, tuple[str, ...]] = {}
        for key in ("produce", "consume", "admin"):
            value = table.get(key, [])
            if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
                raise fail(f"{where}: `{key}` is a list of name patterns like [\"jobs\", "
                           "\"orders.*\"]")
            lists[key] = tuple(value)
        found[name] = ClientConfig(
            name,
            token_env=None if token_env is None else _string(token_env, fail, "token_env"),
            token_file=None if token_file is None else base / _string(
                token_file, fail, "token_file"),
            certificate_subject=subject,
            certificate_fingerprints=tuple(fingerprints),
            certificate_alt_names=tuple(alt_names),
            max_links=table.get("max_links", DEFAULT_MAX_LINKS_PER_CLIENT),
            previous_token_env=None if previous_env is None else _string(
                previous_env, fail, "previous_token_env"),
            previous_token_file=None if previous_file is None else base / _string(
                previous_file, fail, "previous_token_file"),
            **lists,
        )
        try:  # the subject and fingerprints are checked now, not when the node starts
            _grant(found[name], None if found[name].by_certificate else b"-" * 8)
        except InvalidConfiguration as exc:
            raise fail(f"{where}: {exc}") from None
    return tuple(found.values())


def _grant(client: ClientConfig, token: bytes | None, previous: bytes | None = None) -> Any:
    from .access import ClientGrant

    return ClientGrant(client.name, token, produce=client.produce, consume=client.consume,
                       admin=client.admin, certificate_subject=client.certificate_subject,
                       certificate_fingerprints=client.certificate_fingerprints,
                       certificate_alt_names=client.certificate_alt_names,
                       max_links=client.max_links, previous_token=previous)


def parse_clients_ca(raw: Any, base: Path, clients: tuple[ClientConfig, ...],
                     clients_listen: tuple[str, ...] | None, listen: str,
                     tls: TLSFiles | None, fail: Fail) -> Path | None:
    """The top-level ``clients_ca`` key, and the rules of clients proving their name by
    a certificate: they need TLS addresses and a CA to verify them against."""
    ca = None if raw is None else base / _string(raw, fail, "clients_ca")
    served = clients_listen if clients_listen is not None else (listen,)
    if ca is not None:
        if tls is None:
            raise fail("`clients_ca` needs a [tls] table (the members' certificate and key)")
        if clients_listen is None or not any(scheme_of(a) in TLS_SCHEMES for a in served):
            raise fail("`clients_ca` needs a tls:// or wss:// address of the clients' own "
                       "in `clients` (the Raft address verifies its dialers against [tls] "
                       "`ca`)")
        try:
            ssl.create_default_context(cafile=str(ca))
        except (OSError, ssl.SSLError) as exc:
            raise fail(f"`clients_ca` {ca}: not a readable PEM CA certificate "
                       f"({getattr(exc, 'strerror', None) or exc})") from None
    for client in clients:
        if not client.by_certificate:
            continue
        where = f"[[client]] {shown(client.name)} proves its name by a TLS certificate"
        if tls is None or not any(scheme_of(a) in ("tls", "wss") for a in served):
            raise fail(f"{where}: serve clients on a tls:// or wss:// address (`clients`, "
                       "with a [tls] table)")
        if ca is None and (tls.ca is None or not tls.require_client_certificate):
            raise fail(f"{where}: give `clients_ca` (the CA client certificates are signed "
                       "by), or [tls] `ca` with require_client_certificate = true")
    return ca


def check_clients_tls(clients_listen: tuple[str, ...] | None, tls: TLSFiles | None,
                      fail: Fail) -> None:
    """With [tls], the clients' own addresses must use TLS too (as every member's
    address must), or be ``unix:`` sockets, which never leave the host."""
    if tls is None:
        return
    for address in clients_listen or ():
        if scheme_of(address) not in TLS_SCHEMES | {"unix"}:
            raise fail(f"`clients` address {shown(address)} does not use TLS but [tls] is set "
                       "(clients' operations and data would cross the network in the clear): "
                       "use wss:// or tls:// (served with the [tls] certificate), or unix: "
                       "for clients on this host")


def parse_clients_listen(raw: Any, has_clients: bool, raft: Collection[str], fail: Fail,
                         check: Callable[[str], object]) -> tuple[str, ...] | None:
    """The top-level ``clients`` key: one address or a list, none of them a Raft one."""
    if raw is None:
        return None
    items = raw if isinstance(raw, list) else [raw]
    if any(isinstance(item, dict) for item in items):
        raise fail("`clients` is the clients' own address(es); a client's name, token and "
                   "permissions go in a [[client]] table (singular)")
    addresses = tuple(_string(a, fail, "clients") for a in items)
    for address in addresses:
        if address in raft:
            raise fail(f"`clients` {shown(address)} must differ from the Raft addresses")
        check(address)
    if not has_clients:
        raise fail("`clients` gives an address for clients but no [[client]] is listed")
    return addresses


@dataclass(frozen=True)
class ClientLimits:
    """The top-level keys bounding how a member serves its clients:
    ``max_client_links`` (the client links it holds in all, :mod:`.link_caps`),
    ``client_frame_budget`` (bytes of client frames still arriving it holds in all,
    :mod:`.frame_budget`) and ``client_commit_target`` (seconds, :mod:`.proposal_window`).
    """

    max_links: int = DEFAULT_MAX_CLIENT_LINKS
    frame_budget: int = DEFAULT_CLIENT_FRAME_BUDGET
    commit_target: float = DEFAULT_COMMIT_TARGET


def parse_client_limits(doc: dict[str, Any], fail: Fail) -> ClientLimits:
    """The :class:`ClientLimits` keys of a configuration's top level."""
    try:
        return ClientLimits(
            check_positive(doc.get("max_client_links", DEFAULT_MAX_CLIENT_LINKS),
                           "`max_client_links`"),
            check_positive(doc.get("client_frame_budget", DEFAULT_CLIENT_FRAME_BUDGET),
                           "`client_frame_budget`"),
            check_commit_target(doc.get("client_commit_target", DEFAULT_COMMIT_TARGET),
                                "`client_commit_target`"))
    except InvalidConfiguration as exc:
        raise fail(str(exc)) from None


def client_access(clients: tuple[ClientConfig, ...], listen: tuple[str, ...] | None,
                  tls: TLSFiles | None, source: str,
                  clients_ca: Path | None = None,
                  limits: ClientLimits = ClientLimits()) -> ClientAccess | None:
    """The grants of ``clients`` with their tokens read now (``None`` without any); a
    ``tls://`` or ``wss://`` address is served with the node's TLS files, verifying
    client certificates against ``clients_ca`` (else [tls] ``ca``)."""
    if not clients:
        return None
    from ..config import ConfigError
    from .access import ClientAccess
    from .tokens import token_from_env, token_from_file

    grants = []
    for client in clients:
        what = f"{source}: [[client]] {shown(client.name)}"
        try:
            token = (None if client.by_certificate
                     else token_from_env(client.token_env, what) if client.token_env
                     else token_from_file(client.token_file or "", what))
            before = f"{what} previous token"
            previous = (token_from_env(client.previous_token_env, before)
                        if client.previous_token_env
                        else token_from_file(client.previous_token_file, before)
                        if client.previous_token_file else None)
            grants.append(_grant(client, token, previous))
        except InvalidConfiguration as exc:
            raise ConfigError(str(exc)) from None
    ssl_context = None
    if tls is not None and any(scheme_of(a) in ("tls", "wss") for a in listen or ()):
        try:
            ssl_context = tls.server_context()
        except TLSConfigError as exc:
            raise ConfigError(f"{source}: [tls]: {exc}") from None
        if clients_ca is not None or any(c.by_certificate for c in clients):
            ssl_context = _clients_context(tls, clients, clients_ca)
    return ClientAccess(grants, listen=listen, ssl_context=ssl_context,
                        max_links=limits.max_links, frame_budget=limits.frame_budget,
                        commit_target=limits.commit_target)


def _clients_context(tls: TLSFiles, clients: tuple[ClientConfig, ...],
                     clients_ca: Path | None) -> ssl.SSLContext:
    """The server context of the clients' own TLS addresses: the node's certificate,
    client certificates verified against ``clients_ca`` (else [tls] ``ca``), required
    unless some clients use tokens and [tls] require_client_certificate is false."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(str(tls.certificate), str(tls.key))
    context.load_verify_locations(cafile=str(clients_ca or tls.ca))
    tokens = any(not c.by_certificate for c in clients)
    context.verify_mode = (ssl.CERT_OPTIONAL if tokens and not tls.require_client_certificate
                           else ssl.CERT_REQUIRED)
    return context
