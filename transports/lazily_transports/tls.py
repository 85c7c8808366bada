"""TLS settings of a node: its certificate and key, and the CA its peers are signed by.

::

    tls = TLSFiles(certificate="certs/n1.pem", key="certs/n1.key", ca="certs/ca.pem")
    Mesh(config, "tls://10.0.0.1:7001", peers, ssl_context=tls.server_context(),
         client_ssl_context=tls.client_context())

``tls://host:port`` is TCP with TLS; ``wss://`` and ``webrtc+wss://`` (its signaling)
take the same contexts. With a ``ca``, both ends are verified: a dialer checks the
listener's certificate against the CA (and, with ``check_hostname``, that it names
the host it dialed), and a listener requires a client certificate signed by the CA
(``require_client_certificate``). Without ``ca`` the system's trust store verifies
listeners and no client certificate is asked for. TLS adds confidentiality and
server identity on top of the cluster secret's mutual authentication, which still
runs inside every link.

A missing or unreadable file, or a key that does not match its certificate, raises
:class:`TLSConfigError` naming the file.
"""

from __future__ import annotations

import hashlib
import logging
import os
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._core._admission import LogLimiter
from .errors import TransportError

_log = logging.getLogger("lazily_transports.tls")
#: Refused TLS handshakes logged per interval (the rest are counted, then reported).
_refusals = LogLimiter(burst=10)

__all__ = [
    "TLS_SCHEMES",
    "CertificateCheck",
    "PeerCertificate",
    "TLSConfigError",
    "TLSFiles",
    "describe_tls_error",
    "peer_certificate_of",
]

#: Schemes whose links (or whose signaling) run over TLS.
TLS_SCHEMES = frozenset({"tls", "wss", "webrtc+wss"})


class TLSConfigError(TransportError, ValueError):
    """A TLS file is missing, unreadable or inconsistent; the message names it."""


@dataclass(frozen=True)
class TLSFiles:
    """Paths of this node's certificate chain, its private key and the peers' CA."""

    certificate: str | os.PathLike[str]
    key: str | os.PathLike[str]
    ca: str | os.PathLike[str] | None = None
    check_hostname: bool = True
    require_client_certificate: bool = True

    def _check_files(self) -> None:
        named = [("certificate", self.certificate), ("key", self.key)]
        if self.ca is not None:
            named.append(("ca", self.ca))
        for what, path in named:
            file = Path(path)
            if not file.is_file() or not os.access(file, os.R_OK):
                raise TLSConfigError(f"TLS {what} file {file} does not exist or cannot be read")

    def _load_chain(self, context: ssl.SSLContext) -> None:
        try:
            context.load_cert_chain(str(self.certificate), str(self.key))
        except ssl.SSLError as exc:
            raise TLSConfigError(
                f"TLS certificate {self.certificate} and key {self.key} cannot be used "
                f"together ({exc.reason or exc}); the key must be the certificate's, in PEM"
            ) from None

    def _load_ca(self, context: ssl.SSLContext) -> None:
        if self.ca is None:
            context.load_default_certs()  # the system's trust store verifies listeners
            return
        try:
            context.load_verify_locations(cafile=str(self.ca))
        except ssl.SSLError as exc:
            raise TLSConfigError(f"TLS ca file {self.ca} holds no usable PEM certificate "
                                 f"({exc.reason or exc})") from None

    def server_context(self) -> ssl.SSLContext:
        """The context a listener serves with (its certificate; the CA for clients)."""
        self._check_files()
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        self._load_chain(context)
        if self.ca is not None and self.require_client_certificate:
            self._load_ca(context)
            context.verify_mode = ssl.CERT_REQUIRED
        return context

    def client_context(self) -> ssl.SSLContext:
        """The context a dialer connects with (the CA for listeners; its certificate)."""
        self._check_files()
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.check_hostname = self.check_hostname
        context.verify_mode = ssl.CERT_REQUIRED
        self._load_ca(context)
        self._load_chain(context)
        return context


class _ReportingSSLObject(ssl.SSLObject):
    """An ``SSLObject`` that logs a handshake it fails (asyncio says nothing of those
    outside debug mode), so a listener's operator sees why a dialer was refused."""

    def do_handshake(self) -> None:
        try:
            super().do_handshake()
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            raise
        except ssl.SSLError as exc:
            if self.server_side and _refusals.allow():
                unlogged = _refusals.take_suppressed()
                if unlogged:
                    _log.warning("%d more refused TLS connections were not logged", unlogged)
                _log.warning("refused a TLS connection: %s", _handshake_refusal(exc))
            raise


def _handshake_refusal(error: ssl.SSLError) -> str:
    if isinstance(error, ssl.SSLCertVerificationError):
        return f"its certificate failed verification ({error.verify_message or error})"
    reason = (error.reason or str(error)).lower().replace("_", " ")
    if "no certificate" in reason or "certificate required" in reason or (
            "did not return a certificate" in reason):
        return f"it presented no certificate where one is required ({error.reason})"
    return f"TLS handshake failed ({error.reason or error})"


def report_refusals(context: ssl.SSLContext) -> ssl.SSLContext:
    """``context``, made to log every handshake it refuses as a server (a warning naming
    the cause, on the ``lazily_transports.tls`` logger)."""
    context.sslobject_class = _ReportingSSLObject
    return context


def describe_tls_error(error: BaseException) -> str | None:
    """What a TLS failure of a link means for its configuration, or ``None`` when
    ``error`` is not a TLS failure."""
    if isinstance(error, ssl.SSLCertVerificationError):
        detail = error.verify_message or str(error)
        if error.verify_code in (18, 19, 20, 21):  # self-signed / unknown issuer
            return (f"the peer's TLS certificate is not signed by the trusted CA ({detail}); "
                    "give every node a certificate signed by the CA in the others' `ca`")
        if "hostname" in detail.lower() or "IP address mismatch" in detail:
            return (f"the peer's TLS certificate does not name the address dialed ({detail}); "
                    "add the host name or IP to its subjectAltName")
        return f"the peer's TLS certificate was refused ({detail})"
    if isinstance(error, ssl.SSLError):
        reason = (error.reason or str(error)).lower()
        if "unknown ca" in reason or "bad certificate" in reason or "certificate required" in (
                reason):
            return (f"the peer refused this node's TLS certificate ({error.reason}); it must "
                    "be signed by the CA the peer trusts (its `ca`)")
        return f"TLS failed ({error.reason or error})"
    return None


#: Short names of the subject attributes, as RFC 4514 writes them.
_SHORT_NAMES = {
    "commonName": "CN", "organizationName": "O", "organizationalUnitName": "OU",
    "countryName": "C", "stateOrProvinceName": "ST", "localityName": "L",
    "domainComponent": "DC", "userId": "UID", "streetAddress": "STREET",
}


@dataclass(frozen=True)
class PeerCertificate:
    """The certificate the remote end of a TLS link presented, verified by the local
    context's CA (expiry and chain included) before the link was made."""

    #: The certificate, DER encoded.
    der: bytes
    #: Its subject as ``(attribute, value)`` pairs, most significant first (``CN`` last
    #: in the usual ``C, O, OU, CN`` order), attributes by their RFC 4514 short names.
    subject: tuple[tuple[str, str], ...]
    #: Its subjectAltName entries as ``(type, value)`` pairs, in certificate order, types
    #: as :meth:`ssl.SSLSocket.getpeercert` names them (``DNS``, ``URI``, ``email``,
    #: ``IP Address``, ...).
    alt_names: tuple[tuple[str, str], ...] = ()

    @property
    def fingerprint(self) -> str:
        """SHA-256 of the DER certificate, upper-case hex bytes joined by colons (as
        ``openssl x509 -noout -fingerprint -sha256`` prints it)."""
        digest = hashlib.sha256(self.der).hexdigest().upper()
        return ":".join(digest[i:i + 2] for i in range(0, len(digest), 2))

    @property
    def subject_text(self) -> str:
        """The subject in RFC 4514 form (least significant first: ``CN=web,O=Orders``)."""
        return ",".join(f"{name}={_escape(value)}" for name, value in reversed(self.subject))


def _escape(value: str) -> str:
    out = "".join("\\" + c if c in ',+"\\<>;=' else c for c in value)
    if out[:1] in ("#", " "):
        out = "\\" + out
    if out.endswith(" ") and not out.endswith("\\ "):
        out = out[:-1] + "\\ "
    return out


#: Given the verified certificate a client presented (``None`` without one), returns
#: why it is refused, or ``None`` to accept it.
CertificateCheck = Callable[[PeerCertificate | None], str | None]


def peer_certificate_of(ssl_object: Any) -> PeerCertificate | None:
    """The verified peer certificate of an ``ssl.SSLObject`` (``None`` without one)."""
    if ssl_object is None:
        return None
    der = ssl_object.getpeercert(binary_form=True)
    decoded = ssl_object.getpeercert()
    if not der or not decoded:  # no certificate, or one that was not verified
        return None
    subject = tuple(
        (_SHORT_NAMES.get(name, name), str(value))
        for rdn in decoded.get("subject", ()) for name, value in rdn
    )
    alt_names = tuple((str(kind), str(value))
                      for kind, value in decoded.get("subjectAltName", ()))
    return PeerCertificate(bytes(der), subject, alt_names)
