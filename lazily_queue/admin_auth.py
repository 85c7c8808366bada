"""Who may use the admin API: the admin token, browser sessions, and cross-site checks.

The admin token is the operator's credential (never the cluster secret: the secret
authenticates members to each other and must not reach a browser). A command-line
client sends it as ``Authorization: Bearer TOKEN``. A browser logs in once with it
(``POST /admin/login``) and receives a session cookie (``HttpOnly``,
``SameSite=Strict``, ``Path=/``; ``Secure`` when it came over HTTPS, a proxy's
included) and a CSRF token its page sends back in ``X-CSRF-Token`` with
every change.

Every admin request is also refused when it comes from another site: an ``Origin``
header that is not the node's own origin (the request's, or one of ``origins``: its
advertised page behind a proxy), or ``Sec-Fetch-Site`` other than
``same-origin`` / ``none``. A cross-site form or script therefore cannot act with an
operator's cookie, and no CORS header is ever sent.

Guessing is throttled: a source (IP address) that presented :data:`MAX_GUESSES` wrong
tokens within :data:`GUESS_WINDOW` seconds is refused (``too_many_attempts``, 429,
``Retry-After``) until the oldest of them is that old, even with the right token, so a
guess learns nothing meanwhile.
"""

from __future__ import annotations

import hmac
import math
import secrets
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from .admin import AdminError

#: Cookie holding a browser's admin session.
COOKIE = "lazily_admin"
#: Header carrying the session's CSRF token.
CSRF_HEADER = "X-CSRF-Token"
#: Shortest admin token accepted (characters).
MIN_TOKEN = 16
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
#: Wrong tokens one source may present per :data:`GUESS_WINDOW` seconds.
MAX_GUESSES = 10
GUESS_WINDOW = 60.0
#: Sources whose wrong tokens are remembered (the oldest is forgotten first).
MAX_GUESSING_SOURCES = 4096


@dataclass(frozen=True)
class Session:
    id: str
    csrf: str
    expires: float


def origin_of(url: str) -> str:
    """The origin a browser sends for pages under ``url`` (``scheme://host[:port]``, in
    lower case, without a default port)."""
    parts = urlsplit(url.strip())
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    default = {"http": 80, "https": 443}.get(scheme)
    return f"{scheme}://{host}" if port in (None, default) else f"{scheme}://{host}:{port}"


def same_secret(presented: str, expected: str) -> bool:
    """Constant-time comparison of a presented credential with the expected one; any
    text compares (an HTTP header not valid UTF-8, a JSON string with lone surrogates),
    so a malformed credential is wrong, never an error."""
    return hmac.compare_digest(presented.encode("utf-8", "surrogatepass"),
                               expected.encode("utf-8", "surrogatepass"))


class AdminAuth:
    """Checks admin requests against ``token`` (``None``: the admin API is off)."""

    def __init__(self, token: str | None, *, session_ttl: float = 8 * 3600,
                 max_sessions: int = 64, origins: Iterable[str] = ()) -> None:
        if token is not None and len(token) < MIN_TOKEN:
            raise ValueError(f"the admin token must be at least {MIN_TOKEN} characters")
        self._token = token
        #: Origins taken as the node's own besides the request's (its public addresses).
        self.origins = frozenset(origin_of(url) for url in origins)
        self.session_ttl = session_ttl
        self.max_sessions = max_sessions
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._guesses: OrderedDict[str, list[float]] = OrderedDict()

    def _throttle(self, source: str | None) -> None:
        """Refuse ``source`` while it is over its wrong-token allowance."""
        times = None if source is None else self._guesses.get(source)
        if not times:
            return
        now = time.monotonic()
        times[:] = [t for t in times if t > now - GUESS_WINDOW]
        if len(times) >= MAX_GUESSES:
            retry = max(1, math.ceil(times[0] + GUESS_WINDOW - now))
            raise AdminError("too_many_attempts", f"{len(times)} wrong admin tokens from "
                             f"{source} in {GUESS_WINDOW:g} s; try again in {retry} s", 429,
                             retry_after=retry)

    def _wrong_token(self, source: str | None) -> AdminError:
        if source is not None:
            self._guesses.setdefault(source, []).append(time.monotonic())
            self._guesses.move_to_end(source)
            while len(self._guesses) > MAX_GUESSING_SOURCES:
                self._guesses.popitem(last=False)
        return AdminError("unauthorized", "wrong admin token", 401)

    @property
    def enabled(self) -> bool:
        return self._token is not None

    def _require_enabled(self) -> str:
        if self._token is None:
            raise AdminError(
                "admin_disabled", "the admin API is off on this node: set `admin_token_env` "
                "or `admin_token_file` in its configuration and restart it", 403)
        return self._token

    def check_origin(self, headers: Mapping[str, str], own_origin: str) -> None:
        """Refuse a request another site made (see the module docstring)."""
        site = headers.get("Sec-Fetch-Site")
        if site is not None and site not in ("same-origin", "none"):
            raise AdminError("cross_origin", f"refused a {site} request: admin actions are "
                             "only taken from this node's own page", 403)
        origin = headers.get("Origin")
        if origin is not None and origin.rstrip("/") != own_origin and (
                origin.rstrip("/").lower() not in self.origins):
            raise AdminError("cross_origin", f"refused a request from origin {origin}: admin "
                             f"actions are only taken from {own_origin}", 403)

    def login(self, presented: object, source: str | None = None) -> Session:
        """A new session for the right token; ``unauthorized`` otherwise (``source``,
        the client's address, is throttled when it guesses)."""
        token = self._require_enabled()
        self._throttle(source)
        if not isinstance(presented, str) or not same_secret(presented, token):
            raise self._wrong_token(source)
        now = time.time()
        for sid in [s.id for s in self._sessions.values() if s.expires <= now]:
            del self._sessions[sid]
        while len(self._sessions) >= self.max_sessions:
            self._sessions.popitem(last=False)
        session = Session(secrets.token_urlsafe(32), secrets.token_urlsafe(32),
                          now + self.session_ttl)
        self._sessions[session.id] = session
        return session

    def logout(self, session_id: str | None) -> None:
        if session_id is not None:
            self._sessions.pop(session_id, None)

    def session(self, session_id: str | None) -> Session | None:
        """The live session with that id, or ``None``."""
        if session_id is None:
            return None
        found = self._sessions.get(session_id)
        if found is None or found.expires <= time.time():
            self._sessions.pop(session_id, None)
            return None
        return found

    def authorize(self, method: str, headers: Mapping[str, str], session_id: str | None,
                  own_origin: str, source: str | None = None) -> str:
        """Raise :class:`AdminError` unless the request may act; returns ``"token"`` or
        ``"session"`` (how it authenticated)."""
        token = self._require_enabled()
        self.check_origin(headers, own_origin)
        authorization = headers.get("Authorization")
        if authorization is not None:
            scheme, _, presented = authorization.partition(" ")
            self._throttle(source)
            if scheme.lower() != "bearer" or not same_secret(presented.strip(), token):
                raise self._wrong_token(source)
            return "token"
        session = self.session(session_id)
        if session is None:
            raise AdminError("unauthorized", "log in with the admin token (or send "
                             "`Authorization: Bearer TOKEN`)", 401)
        if method.upper() not in SAFE_METHODS:
            presented = headers.get(CSRF_HEADER, "")
            if not same_secret(presented, session.csrf):
                raise AdminError("csrf", f"missing or wrong {CSRF_HEADER} header: reload the "
                                 "page", 403)
        return "session"
