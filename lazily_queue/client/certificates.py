"""Clients proving their name by a TLS client certificate instead of a token.

A client dials ``tls://`` or ``wss://`` with :class:`CertificateCredentials`; the member
verifies the certificate against the CA it trusts for clients (chain and validity, in
the TLS handshake) and then checks it is the named client's: its subject (RFC 4514,
:func:`parse_subject`), its subjectAltName (:func:`parse_alt_name`) and/or its SHA-256
fingerprint (:func:`normalize_fingerprint`) as the client's grant lists them.
"""

from __future__ import annotations

import os
import re
import ssl
import time
from dataclasses import dataclass

from lazily_transports import TLSConfigError, TLSFiles

from ..errors import InvalidConfiguration, shown

_NAME = re.compile(r"^[A-Za-z0-9_.@:+-]{1,128}$")


def check_client_name(name: object) -> None:
    """Raise :class:`InvalidConfiguration` unless ``name`` is a client's name."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise InvalidConfiguration(
            f"client name {shown(name)} must be 1 to 128 letters, digits or _.@:+-")


@dataclass(frozen=True)
class CertificateCredentials:
    """What a client proving its name by a TLS client certificate presents: its
    ``name``, its ``certificate`` chain and ``key`` (PEM files), and the ``ca`` the
    members' certificates are signed by (``None``: the system's trust store). Only over
    ``tls://`` and ``wss://``; with ``check_hostname`` a member's certificate must name
    the address dialed."""

    name: str
    certificate: str | os.PathLike[str]
    key: str | os.PathLike[str]
    ca: str | os.PathLike[str] | None = None
    check_hostname: bool = True

    def __post_init__(self) -> None:
        check_client_name(self.name)

    def ssl_context(self) -> ssl.SSLContext:
        """The TLS context this client dials with (its certificate; the members' CA)."""
        files = TLSFiles(self.certificate, self.key, self.ca,
                         check_hostname=self.check_hostname)
        try:
            return files.client_context()
        except TLSConfigError as exc:
            raise InvalidConfiguration(f"client {self.name!r}: {exc}") from None


    def refusal(self, detail: str) -> str:
        """Why a member most likely closed this client's TLS link right after the TLS
        handshake (``detail``: how it ended): it did not verify the certificate."""
        validity = _validity(self.certificate)
        now = time.time()
        if validity is not None and validity[1] < now:
            why = (f"this client's TLS certificate {self.certificate} expired on "
                   f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime(validity[1]))}; "
                   "give the client a renewed one")
        elif validity is not None and validity[0] > now:
            why = (f"this client's TLS certificate {self.certificate} is not valid before "
                   f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime(validity[0]))}")
        else:
            why = (f"the member did not accept this client's TLS certificate "
                   f"{self.certificate}: it must be signed by the CA the members verify "
                   "clients against (`clients_ca`, else [tls] `ca`), and dialled at an "
                   "address serving clients (with `clients_ca`: one of `clients`, not "
                   "`listen`)")
        return f"{why} (the member closed the link after the TLS handshake: {detail})"


def _validity(path: str | os.PathLike[str]) -> tuple[float, float] | None:
    """``(not before, not after)`` of the PEM certificate at ``path``, in epoch seconds
    (``None`` when it cannot be read)."""
    decode = getattr(ssl, "_ssl", None)
    decode = getattr(decode, "_test_decode_cert", None)
    if decode is None:
        return None
    try:
        fields = decode(os.fspath(path))
        return (ssl.cert_time_to_seconds(fields["notBefore"]),
                ssl.cert_time_to_seconds(fields["notAfter"]))
    except (OSError, ValueError, KeyError, ssl.SSLError):
        return None


_SUBJECT_NAMES = {"COMMONNAME": "CN", "ORGANIZATIONNAME": "O",
                  "ORGANIZATIONALUNITNAME": "OU", "COUNTRYNAME": "C",
                  "STATEORPROVINCENAME": "ST", "LOCALITYNAME": "L", "DOMAINCOMPONENT": "DC",
                  "USERID": "UID", "STREETADDRESS": "STREET"}


def attribute(name: str) -> str:
    upper = name.strip().upper()
    return _SUBJECT_NAMES.get(upper, upper)


def parse_subject(text: str, what: str) -> tuple[tuple[str, str], ...]:
    """An RFC 4514 subject (``CN=web,O=Orders``; ``\\`` escapes ``,`` ``+`` ``=``) as
    sorted ``(attribute, value)`` pairs: attribute order does not matter."""
    pairs: list[tuple[str, str]] = []
    current, escaped = "", False
    for char in [*text, ","]:
        if escaped:
            current, escaped = current + "\x00" + char, False
        elif char == "\\":
            escaped = True
        elif char in ",+":
            name, sep, value = current.partition("=")
            if not sep or not name.strip() or not value.strip():
                raise InvalidConfiguration(
                    f"{what}: certificate_subject {text!r} is not like \"CN=web,O=Orders\" "
                    "(attribute=value pairs separated by commas)")
            pairs.append((attribute(name), value.strip().replace("\x00", "")))
            current = ""
        else:
            current += char
    if escaped:
        raise InvalidConfiguration(f"{what}: certificate_subject {text!r} ends with a \\")
    return tuple(sorted(pairs))


#: The subjectAltName types a grant may name, by their lower-case spelling.
_ALT_TYPES = {"dns": "DNS", "uri": "URI", "email": "email"}


def alt_name(kind: str, value: str) -> tuple[str, str]:
    """A subjectAltName entry in the form it is compared in: a DNS name in lower case
    without a final dot, an email address with its domain in lower case, a URI as is."""
    if kind == "DNS":
        return kind, value.lower().removesuffix(".")
    if kind == "email":
        local, at, domain = value.rpartition("@")
        return kind, f"{local}{at}{domain.lower()}" if at else value
    return kind, value


def parse_alt_name(text: str, what: str) -> tuple[str, str]:
    """A subjectAltName a grant names, ``"DNS:web.orders.internal"``,
    ``"URI:spiffe://orders/web"`` or ``"email:web@orders.example"``, as the
    ``(type, value)`` pair :func:`alt_name` compares."""
    if not isinstance(text, str):
        raise InvalidConfiguration(f"{what}: certificate_alt_names holds strings like "
                                   f"\"DNS:web.orders.internal\", not {text!r}")
    kind, sep, value = text.partition(":")
    canonical = _ALT_TYPES.get(kind.strip().lower())
    value = value.strip()
    if not sep or canonical is None or not value:
        raise InvalidConfiguration(
            f"{what}: certificate_alt_names entry {text!r} is not like "
            "\"DNS:web.orders.internal\", \"URI:spiffe://orders/web\" or "
            "\"email:web@orders.example\" (a type, DNS, URI or email, a colon, the name)")
    if canonical == "DNS" and ("*" in value or " " in value):
        raise InvalidConfiguration(
            f"{what}: certificate_alt_names entry {text!r}: a DNS name is matched exactly; "
            "wildcards do not name one client")
    return alt_name(canonical, value)


def normalize_fingerprint(text: str, what: str) -> str:
    """A SHA-256 fingerprint (hex, with or without colons, an optional ``sha256:`` or
    ``SHA256 Fingerprint=`` prefix) as 64 lower-case hex digits."""
    value = text.strip()
    for prefix in ("sha256 fingerprint=", "sha256:", "sha256="):
        if value.lower().startswith(prefix):
            value = value[len(prefix):]
    value = value.replace(":", "").lower()
    if len(value) != 64 or any(c not in "0123456789abcdef" for c in value):
        raise InvalidConfiguration(
            f"{what}: {text!r} is not a SHA-256 certificate fingerprint (64 hex digits, "
            "as `openssl x509 -noout -fingerprint -sha256 -in CERT` prints)")
    return value
