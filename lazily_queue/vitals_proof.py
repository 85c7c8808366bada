"""Proof that a member's vitals come from a member of this cluster.

A member reading another's ``/vitals.json`` (:mod:`.peer_pages`) sends a fresh random
nonce in the :data:`NONCE_HEADER` request header; the page answers its usual body with
:data:`PROOF_HEADER`, an HMAC-SHA256 over the nonce and the body's exact bytes under
:func:`vitals_key`, a key derived from the cluster secret and the cluster's name (the
secret itself never goes over HTTP, and the key proves nothing but vitals). The reader
checks the proof in constant time against its own nonce, so an answer made for another
nonce (replayed, or kept from before) is refused, and a process without the secret
cannot make one. A request without a nonce (an operator's ``curl``, a monitoring
system) gets the same body without a proof.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

#: Request header carrying the reader's nonce (hex).
NONCE_HEADER = "X-Lazily-Vitals-Nonce"
#: Response header carrying the page's proof (hex).
PROOF_HEADER = "X-Lazily-Vitals-Proof"
#: Bytes of a nonce (its header holds twice as many hex digits).
NONCE_BYTES = 16
_KEY_LABEL = b"lazily-queue vitals proof v1\x00"
_PROOF_LABEL = b"vitals\x00"


class BadNonce(ValueError):
    """A nonce header that is not :data:`NONCE_BYTES` bytes in hex."""


def vitals_key(secret: bytes, cluster: str) -> bytes:
    """The key proving the vitals of ``cluster``'s members (derived, one-way, from
    ``secret``)."""
    return hmac.new(secret, _KEY_LABEL + cluster.encode(), hashlib.sha256).digest()


def new_nonce() -> str:
    """A fresh nonce, as its header holds it."""
    return secrets.token_hex(NONCE_BYTES)


def parse_nonce(header: str) -> bytes:
    """The nonce a :data:`NONCE_HEADER` holds; :class:`BadNonce` when it is malformed."""
    text = header.strip()
    if len(text) != 2 * NONCE_BYTES:
        raise BadNonce(f"{NONCE_HEADER} must be {2 * NONCE_BYTES} hex digits, not "
                       f"{len(text)} characters")
    try:
        return bytes.fromhex(text)
    except ValueError:
        raise BadNonce(f"{NONCE_HEADER} must be {2 * NONCE_BYTES} hex digits") from None


def prove(key: bytes, nonce: bytes, body: bytes) -> str:
    """The proof of ``body`` answering ``nonce`` (hex)."""
    return hmac.new(key, _PROOF_LABEL + nonce + body, hashlib.sha256).hexdigest()


def proven(key: bytes, nonce: bytes, body: bytes, proof: str | None) -> bool:
    """Whether ``proof`` proves ``body`` answering ``nonce`` (checked in constant time)."""
    if proof is None:
        return False
    given = proof.strip().lower().encode("utf-8", "replace")
    return hmac.compare_digest(prove(key, nonce, body).encode(), given)


def vitals_answer(body: bytes, nonce_header: str | None,
                  key: bytes | None) -> dict[str, str]:
    """The headers answering a vitals request: with :data:`PROOF_HEADER` when the
    request carries a nonce and this member has a key. Raises :class:`BadNonce`."""
    headers = {"Content-Type": "application/json", "Cache-Control": "no-store"}
    if nonce_header is not None:
        nonce = parse_nonce(nonce_header)
        if key is not None:
            headers[PROOF_HEADER] = prove(key, nonce, body)
    return headers
