"""Who may connect as a client, with what token, and what each client may do.

A member serving clients holds one :class:`ClientGrant` per client name: its token
(never the cluster secret) and its permissions, as glob patterns of object names
(``"jobs"``, ``"orders.*"``, ``"*"``) per kind of operation:

- ``produce``: push to queues and work queues, close queues, publish on topics;
- ``consume``: pop (and return) from queues; claim, ack, nack, extend and release work
  items; subscribe, reconnect, disconnect, advance and delete topic subscribers; join a topic's
  consumer group and consume from it (the group's work queue ``"<topic>:<group>"`` is
  opened by the permission on the topic's name);
- ``admin``: everything above plus reaping leases, redriving dead letters, topic GC
  and restore, purging and deleting objects.

Declaring an object and mirroring it (reading) need any of the three. The push and pop
capabilities the spec's ``PeerPermissions`` separates map to ``produce`` and
``consume``. A client sends :class:`Credentials` (its name and token) or, over
``tls://`` and ``wss://``, :class:`CertificateCredentials` (its name, and a TLS client
certificate the member verifies against its client CA and matches against the
grant's ``certificate_subject``, ``certificate_alt_names`` and/or
``certificate_fingerprints``).
"""

from __future__ import annotations

import os
import re
import ssl
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fnmatch import translate
from typing import TYPE_CHECKING

from lazily_transports.tls import CertificateCheck, PeerCertificate

from ..errors import InvalidConfiguration, shown
from ..links import link_scheme
from ..names import check_positive
from ..replicated import ops
from ..replicated.client_sessions import owner_tag
from .certificates import (
    alt_name,
    attribute,
    check_client_name,
    normalize_fingerprint,
    parse_alt_name,
    parse_subject,
)
from .frame_budget import DEFAULT_CLIENT_FRAME_BUDGET
from .link_caps import DEFAULT_MAX_CLIENT_LINKS, DEFAULT_MAX_LINKS_PER_CLIENT
from .proposal_window import DEFAULT_COMMIT_TARGET, check_commit_target
from .tokens import token_bytes, token_from_env, token_from_file

PRODUCE = frozenset({ops.QUEUE_PUSH, ops.QUEUE_CLOSE, ops.WORK_PUSH, ops.TOPIC_PUBLISH,
                     ops.QUEUE_PUSH_ONCE, ops.WORK_PUSH_ONCE, ops.TOPIC_PUBLISH_ONCE,
                     ops.QUEUE_PUSH_HEADERS, ops.TOPIC_PUBLISH_HEADERS, ops.WORK_PUSH_HEADERS,
                     ops.QUEUE_PUSH_TTL, ops.WORK_PUSH_TTL, ops.WORK_PUSH_SCHEDULED,
                     ops.TOPIC_PUBLISH_OPTIONS, ops.QUEUE_PUSH_OPTIONS,
                     ops.WORK_PUSH_OPTIONS})
CONSUME = frozenset({
    ops.QUEUE_POP, ops.QUEUE_POP_MANY, ops.QUEUE_POP_STAMPED, ops.QUEUE_UNPOP_STAMPED,
    ops.QUEUE_POP_HEADERS, ops.QUEUE_UNPOP_HEADERS, ops.WORK_CLAIM,
    ops.WORK_CLAIM_MANY, ops.WORK_ACK, ops.WORK_NACK, ops.WORK_EXTEND, ops.WORK_RELEASE,
    ops.WORK_SETTLE_MANY, ops.WORK_NACK_DELAYED, ops.TOPIC_SUBSCRIBE, ops.TOPIC_RECONNECT,
    ops.TOPIC_DISCONNECT, ops.TOPIC_ADVANCE, ops.TOPIC_ADVANCE_TO, ops.TOPIC_SUBSCRIBE_AT,
    ops.TOPIC_DELETE_SUBSCRIBER, ops.TOPIC_SEEK, ops.TOPIC_SUBSCRIBE_AT_TIME, ops.TOPIC_SEEK_TIME,
    ops.GROUP_DECLARE,
})
ADMIN = frozenset({ops.QUEUE_UNPOP, ops.QUEUE_UNPOP_MANY, ops.WORK_REAP, ops.WORK_REDRIVE,
                   ops.TOPIC_GC, ops.TOPIC_RESTORE, ops.QUEUE_PURGE, ops.QUEUE_DELETE,
                   ops.TOPIC_DELETE, ops.WORK_PURGE, ops.WORK_DELETE, ops.EXPIRE})
DECLARE = frozenset({ops.QUEUE_DECLARE, ops.WORK_DECLARE, ops.TOPIC_DECLARE,
                     ops.WORK_DECLARE_RETRY, ops.EXPIRY_RULES, ops.QUEUE_DECLARE_LIMITED,
                     ops.TOPIC_DECLARE_LIMITED, ops.WORK_DECLARE_LIMITED,
                     ops.WORK_DECLARE_OPTIONS})
#: Cluster ops a client may propose (with no name).
CLUSTER = frozenset({ops.BARRIER, ops.SESSION_END})
#: Ops only a leader proposes (its maintenance, or as it starts leading): refused to every
#: client, admin included.
MAINTENANCE = frozenset({ops.QUEUE_PROMOTE, ops.WORK_PROMOTE, ops.POPPED_CHECKING})
PERMISSIONS = ("produce", "consume", "admin")
#: The ``refusal`` code of reading (mirroring) an object.
READ = -1


@dataclass(frozen=True, repr=False)
class Credentials:
    """What a client presents: its ``name`` and ``token`` (never the cluster secret)."""

    name: str
    token: bytes

    if TYPE_CHECKING:  # a str token is taken as its UTF-8 bytes
        def __init__(self, name: str, token: bytes | str) -> None: ...

    def __post_init__(self) -> None:
        check_client_name(self.name)
        object.__setattr__(self, "token", token_bytes(self.token, f"client {self.name!r}"))

    def __repr__(self) -> str:
        return f"Credentials({self.name!r}, token=...)"

    @classmethod
    def from_env(cls, name: str, variable: str) -> Credentials:
        """The token from environment variable ``variable``."""
        return cls(name, token_from_env(variable, f"client {name!r}"))

    @classmethod
    def from_file(cls, name: str, path: str | os.PathLike[str]) -> Credentials:
        """The token from the file at ``path`` (surrounding whitespace ignored)."""
        return cls(name, token_from_file(path, f"client {name!r}"))


def _patterns(value: Iterable[str], what: str) -> tuple[str, ...]:
    if isinstance(value, str):
        raise InvalidConfiguration(f"{what} must be a list of name patterns, not a string")
    items = tuple(value)
    for item in items:
        if not isinstance(item, str) or not item:
            raise InvalidConfiguration(f"{what}: every pattern is a non-empty string")
    return items


def _matcher(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{translate(p)})" for p in patterns))


@dataclass(frozen=True, repr=False)
class ClientGrant:
    """One client: its name, how it proves it and its permissions (module docstring).

    It proves its name either by its ``token``, or by a TLS client certificate: then
    ``certificate_subject`` (an RFC 4514 subject, ``"CN=web,O=Orders"``, matched
    attribute by attribute in any order), ``certificate_alt_names`` (subjectAltName
    entries, ``"DNS:web.orders.internal"``, ``"URI:spiffe://orders/web"``,
    ``"email:web@orders.example"``: the certificate must carry at least one of them,
    compared exactly, DNS names and email domains ignoring case) and/or
    ``certificate_fingerprints`` (SHA-256 fingerprints of the certificates it may use,
    several while one replaces another) say which certificates are its; each one given
    must match. The certificate must also be valid (not expired) and signed by the CA
    the member verifies clients against.

    ``previous_token``, beside ``token``, is accepted as well while the clients move
    from it to ``token``. ``max_links`` caps the links it may hold open to one member at
    once (:mod:`.link_caps`)."""

    name: str
    token: bytes | None = None
    produce: Sequence[str] = ()
    consume: Sequence[str] = ()
    admin: Sequence[str] = ()
    certificate_subject: str | None = None
    certificate_fingerprints: Sequence[str] = ()
    certificate_alt_names: Sequence[str] = ()
    max_links: int = DEFAULT_MAX_LINKS_PER_CLIENT
    previous_token: bytes | None = None
    _matchers: dict[str, re.Pattern[str] | None] = field(init=False, compare=False)
    _subject: tuple[tuple[str, str], ...] | None = field(init=False, compare=False)
    _alt_names: frozenset[tuple[str, str]] = field(init=False, compare=False)

    if TYPE_CHECKING:  # a str token is taken as its UTF-8 bytes
        def __init__(self, name: str, token: bytes | str | None = None,
                     produce: Sequence[str] = (), consume: Sequence[str] = (),
                     admin: Sequence[str] = (), certificate_subject: str | None = None,
                     certificate_fingerprints: Sequence[str] = (),
                     certificate_alt_names: Sequence[str] = (),
                     max_links: int = DEFAULT_MAX_LINKS_PER_CLIENT,
                     previous_token: bytes | str | None = None) -> None: ...

    def __post_init__(self) -> None:
        what = f"client {self.name!r}"
        check_positive(self.max_links, f"{what} max_links")
        for key in ("certificate_fingerprints", "certificate_alt_names"):
            if isinstance(getattr(self, key), str):
                object.__setattr__(self, key, (getattr(self, key),))
        by_certificate = (self.certificate_subject is not None
                          or bool(self.certificate_fingerprints)
                          or bool(self.certificate_alt_names))
        if by_certificate == (self.token is not None):
            raise InvalidConfiguration(
                f"{what}: give either its token or the certificate it proves its name with "
                "(certificate_subject, certificate_alt_names and/or "
                "certificate_fingerprints), not both")
        if self.token is not None:
            Credentials(self.name, self.token)  # the same rules for name and token
            object.__setattr__(self, "token", token_bytes(self.token, what))
            if self.previous_token is not None:
                previous = token_bytes(self.previous_token, f"{what} previous_token")
                if previous == self.token:
                    raise InvalidConfiguration(
                        f"{what}: previous_token is its token; give the token being "
                        "replaced, or none")
                object.__setattr__(self, "previous_token", previous)
        elif self.previous_token is not None:
            raise InvalidConfiguration(
                f"{what}: previous_token goes with a token, not a certificate")
        else:
            Credentials(self.name, b"-" * 8)  # the same rule for the name
        object.__setattr__(self, "_subject", None if self.certificate_subject is None
                           else parse_subject(self.certificate_subject, what))
        object.__setattr__(self, "certificate_fingerprints", tuple(
            normalize_fingerprint(f, what) for f in self.certificate_fingerprints))
        object.__setattr__(self, "certificate_alt_names", tuple(self.certificate_alt_names))
        object.__setattr__(self, "_alt_names", frozenset(
            parse_alt_name(a, what) for a in self.certificate_alt_names))
        matchers: dict[str, re.Pattern[str] | None] = {}
        for permission in PERMISSIONS:
            patterns = _patterns(getattr(self, permission), f"client {self.name!r} {permission}")
            object.__setattr__(self, permission, patterns)
            matchers[permission] = _matcher(patterns)
        object.__setattr__(self, "_matchers", matchers)

    def __repr__(self) -> str:
        how = ("token=..." + (", previous_token=..." if self.previous_token else "")
               if self.token is not None else (
            f"certificate_subject={self.certificate_subject!r}, "
            f"certificate_alt_names={list(self.certificate_alt_names)}, "
            f"certificate_fingerprints={list(self.certificate_fingerprints)}"))
        return (f"ClientGrant({self.name!r}, {how}, produce={list(self.produce)}, "
                f"consume={list(self.consume)}, admin={list(self.admin)})")

    def check_certificate(self, certificate: PeerCertificate | None) -> str | None:
        """Why ``certificate`` (verified by the TLS layer) does not prove this client's
        name; ``None`` when it does."""
        if certificate is None:
            return (f"client {self.name!r} proves its name with a TLS client certificate "
                    "and presented none: dial a tls:// or wss:// address with its "
                    "certificate and key (CertificateCredentials)")
        if self._subject is not None and tuple(sorted(
                (attribute(n), v) for n, v in certificate.subject)) != self._subject:
            return (f"the TLS certificate presented (subject {certificate.subject_text!r}) "
                    f"is not client {self.name!r}'s (certificate_subject "
                    f"{self.certificate_subject!r})")
        if self._alt_names and not any(alt_name(kind, value) in self._alt_names
                                       for kind, value in certificate.alt_names):
            held = ", ".join(f"{kind}:{value}" for kind, value in certificate.alt_names)
            return (f"the TLS certificate presented carries none of client {self.name!r}'s "
                    f"certificate_alt_names (its subjectAltName: {held or 'none'})")
        fingerprint = certificate.fingerprint.replace(":", "").lower()
        if self.certificate_fingerprints and fingerprint not in self.certificate_fingerprints:
            return (f"the TLS certificate presented (SHA-256 {certificate.fingerprint}) is "
                    f"not one of client {self.name!r}'s certificate_fingerprints")
        return None

    @property
    def produces_everywhere(self) -> bool:
        """Whether it may produce to (and administer) any name: ``"*"`` is among its
        ``produce`` or ``admin`` patterns."""
        return "*" in self.produce or "*" in self.admin

    def _has(self, permission: str, name: str) -> bool:
        matcher = self._matchers[permission]
        return matcher is not None and matcher.fullmatch(name) is not None

    def refusal(self, code: int, name: str | None) -> str | None:
        """Why this client may not run op ``code`` on object ``name``; ``None`` if it may.

        ``code`` :data:`READ` asks about reading (mirroring) the object."""
        if code in CLUSTER:
            return None
        if not isinstance(name, str) or code in MAINTENANCE:
            return "this operation is not open to clients"
        if self._has("admin", name):
            return None
        needed: tuple[str, ...]
        if code in PRODUCE:
            needed = ("produce",)
        elif code in CONSUME:
            needed = ("consume",)
        elif code in DECLARE or code == READ:
            needed = ("produce", "consume")
        elif code in ADMIN:
            needed = ()
        else:
            return "this operation is not open to clients"
        if any(self._has(p, name) for p in needed):
            return None
        wanted = ", ".join(needed) + (" or admin" if needed else "admin")
        verb = ("read" if code == READ else "open" if code in DECLARE else "push to"
                if code in PRODUCE else "consume from" if code in CONSUME else "manage")
        what = "" if code == READ or code in DECLARE else f" ({ops.op_name(code)})"
        held = "token" if self.token is not None else "certificate"
        *some, last = [f"`{p}`" for p in (*needed, "admin")]
        lists = f"{', '.join(some)} or {last}" if some else last
        return (f"client {self.name!r} may not {verb} {shown(name)}{what}: its {held} lacks the "
                f"{wanted} permission for that name; to allow it, add a pattern matching "
                f"the name to its {lists} list in each member's [[client]] table (ClientGrant)")


class ClientAccess:
    """The clients a member serves: grants by name, in-flight bounds, and where:
    ``listen`` (one address or several) of their own, or by default the member's own
    listen address. ``max_links`` caps the client links the member holds open in all
    (:mod:`.link_caps`), ``frame_budget`` the bytes of their frames still arriving
    (:mod:`.frame_budget`). While clients have more ops than the member proposes at
    once, it proposes fewer while their commits take longer than ``commit_target``
    seconds (0: never; :mod:`.proposal_window`)."""

    def __init__(
        self,
        grants: Iterable[ClientGrant],
        *,
        listen: str | Sequence[str] | None = None,
        max_in_flight: int = 512,
        max_total_in_flight: int = 1024,
        ssl_context: ssl.SSLContext | None = None,
        max_links: int = DEFAULT_MAX_CLIENT_LINKS,
        frame_budget: int = DEFAULT_CLIENT_FRAME_BUDGET,
        commit_target: float = DEFAULT_COMMIT_TARGET,
    ) -> None:
        """``ssl_context`` is the server context of ``wss://`` addresses in ``listen``."""
        check_positive(max_links, "max_links")
        check_positive(frame_budget, "frame_budget")
        self.max_links = max_links
        self.commit_target = check_commit_target(commit_target, "commit_target")
        self.frame_budget = frame_budget
        self.ssl_context = ssl_context
        self.grants: dict[str, ClientGrant] = {}
        tagged: dict[int, str] = {}
        tokens: dict[bytes, str] = {}
        for grant in grants:
            if not isinstance(grant, ClientGrant):
                raise InvalidConfiguration(f"expected ClientGrant objects, got {shown(grant)}")
            if grant.name in self.grants:
                raise InvalidConfiguration(f"client {grant.name!r} is listed twice")
            for token in (grant.token, grant.previous_token):
                holder = None if token is None else tokens.setdefault(token, grant.name)
                if holder not in (None, grant.name):
                    raise InvalidConfiguration(
                        f"clients {holder!r} and {grant.name!r} share a token (a token or "
                        "previous token of one is the other's): whoever holds it could link "
                        "as either, with its permissions; give each client its own")
            other = tagged.setdefault(owner_tag(grant.name), grant.name)
            if other != grant.name:
                raise InvalidConfiguration(
                    f"clients {other!r} and {grant.name!r} have the same session tag (a "
                    "16-bit hash of the name, which a member checks a hello's session id "
                    "against): either could name the other's sessions, read the results "
                    "kept for its retries and have its next ops answered as duplicates; "
                    "rename one of them")
            self.grants[grant.name] = grant
        check_positive(max_in_flight, "max_in_flight")
        check_positive(max_total_in_flight, "max_total_in_flight")
        self.listen: tuple[str, ...] | None = (
            None if listen is None else (listen,) if isinstance(listen, str) else tuple(listen))
        if self.listen is not None and (not self.listen or not all(
                isinstance(a, str) and a for a in self.listen)):
            raise InvalidConfiguration(f"listen must be an address or a list of them, not "
                                       f"{listen!r}")
        for address in self.listen or ():
            link_scheme(f"client listen address {shown(address)}", address)
        self.max_in_flight = max_in_flight
        self.max_total_in_flight = max_total_in_flight

    def token(self, name: str) -> bytes | None:
        """The token of client ``name`` (``None`` for an unknown client or one that
        proves its name by a certificate)."""
        grant = self.grants.get(name)
        return None if grant is None else grant.token

    def credential(self, name: str) -> bytes | tuple[bytes, ...] | CertificateCheck | None:
        """How client ``name`` proves its name: its token (with its previous one, either
        of the two), or the check of its TLS certificate (``None`` for an unknown
        client)."""
        grant = self.grants.get(name)
        if grant is None:
            return None
        if grant.token is None:
            return grant.check_certificate
        if grant.previous_token is None:
            return grant.token
        return grant.token, grant.previous_token

    def __repr__(self) -> str:
        return f"ClientAccess({sorted(self.grants)}, listen={self.listen!r})"
