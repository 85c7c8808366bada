"""How a client links to its members in turn: a mixin of
:class:`~.cluster.ClusterClient` (which sets up what is declared here).

:meth:`Dialling._run` dials the listed addresses in order (the leader's next when one
was learned, :mod:`.leader_seeking`) and serves each link until it ends. It pauses (50 ms,
doubling up to 1 s) after each round of addresses, after a link when
:meth:`Dialling._served` says so, and when the leader's address a follower named does
not answer (the followers name a leader that died until they elect another: the client
would go back and forth between them at once). It gives up when,
before any link, every address refused the client for good: every member refused its
credential (:class:`~.protocol.AccessDenied`), or an HTTP server answered at some
(:class:`~.protocol.Unreachable`); an address where nothing answers yet is dialled until
``connect_timeout``. It gives up too when, before any hello was answered, every member
refused its link over a cap (:class:`~.protocol.TooManyLinks`). ``failures`` keeps what
happened at each address; the client's errors name it (:meth:`Dialling._unreachable`).
A refused dial is logged once per address and refusal until the client links.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import ssl
from functools import partial
from typing import TYPE_CHECKING, Any

from lazily_transports import HandshakeError, LinkConfig, LinkStream, SchemeTable, dial
from lazily_transports.errors import HTTP_ANSWERED, NO_CLIENTS

from ..raft.errors import StorageUnavailable
from . import protocol as P
from .access import Credentials
from .certificates import CertificateCredentials
from .frame_budget import FRAME_BUDGET
from .link import Link

if TYPE_CHECKING:
    from .session import Session

#: The client's logger (:mod:`.cluster`'s): a failed link is logged as the client's.
log = logging.getLogger(__name__.rpartition(".")[0] + ".cluster")


def tls_refusal(address: str, error: ssl.SSLError) -> str | None:
    """What a dial of ``address`` met in its TLS handshake when no retry can change it
    (nothing speaking TLS answered; the member's certificate is not trusted)."""
    if isinstance(error, ssl.SSLCertVerificationError):
        return (f"the certificate of {address} was not verified ({error.verify_message}): "
                "the client's ssl_context must trust the CA that signed the members' "
                "certificates, for that host name")
    if error.reason == "WRONG_VERSION_NUMBER":
        return (f"{address} did not answer in TLS: it is a plain link or HTTP address; "
                "dial a member's tls:// or wss:// address")
    return None


class Backoff:
    """Pauses of 50 ms, each twice the last, up to 1 s; :meth:`reset` starts over."""

    FIRST, LAST = 0.05, 1.0

    def __init__(self) -> None:
        self.delay = self.FIRST

    async def pause(self) -> None:
        await asyncio.sleep(self.delay)
        self.delay = min(self.delay * 2, self.LAST)

    def reset(self) -> None:
        self.delay = self.FIRST


#: Errors of a dial that found nothing listening at the address.
_NOTHING = frozenset({errno.ECONNREFUSED, errno.ENOENT})
#: What a client is told of an address where nothing listens.
NOTHING_LISTENS = (": nothing listens there (is the member running, and is this its "
                   "`listen` or `clients` address?)")


class Dialling:
    """The client's link loop and the errors naming its members' failures (module
    docstring)."""

    addresses: list[str]
    credentials: Credentials | CertificateCredentials
    failures: dict[str, str]
    dead_ends: set[str]
    links: int
    _closing: bool
    _next: str | None
    _config: LinkConfig
    _dial_timeout: float
    _ssl: ssl.SSLContext | None
    _schemes: SchemeTable | None
    _unserved: int
    _capped: int
    _budget_refused: bool
    _fatal: Exception | None
    #: The refusals logged (address, refusal) since the client last linked.
    _warned: set[tuple[str, str]]
    session: Session

    async def _serve(self, link: Link) -> None:
        raise NotImplementedError

    def _notice(self, kind: int, payload: Any) -> None:
        raise NotImplementedError

    def _failure_text(self, what: str) -> str:
        found = "; ".join(f"{a}: {self.failures.get(a, 'not tried')}" for a in self.addresses)
        return f"{what} ({found})"

    def _denial_fix(self) -> str:
        """What to do when a member knows no client of the name presented, or an address
        takes no clients."""
        served = [a for a in self.addresses if NO_CLIENTS in self.failures.get(a, "")]
        if served:
            return (f": {', '.join(served)} take{'s' if len(served) == 1 else ''} no clients: "
                    "a member takes them at its `clients` address when it has one, else at "
                    "its listen address once it lists [[client]] tables (Node(clients=...)); "
                    "dial that address")
        if not any("unknown client credential" in f for f in self.failures.values()):
            return ""
        name = self.credentials.name
        return (f": the members list no [[client]] named {name!r}: add one to each "
                "member's TOML (or a ClientGrant to Node(clients=...)), or check the name "
                "the client passes")

    def _refused_for_good(self, unlinkable: int) -> Exception:
        """The error when every address refused the client for good, ``unlinkable`` of
        them before a member could tell (an HTTP server answered, no TLS or a TLS
        certificate not trusted)."""
        if not unlinkable:
            return P.AccessDenied(self._failure_text(
                f"every member refused client {self.credentials.name!r}") + self._denial_fix())
        if all(HTTP_ANSWERED in self.failures.get(a, "") for a in self.addresses):
            what = ("an HTTP server answered at every address given; dial a member's listen "
                    "or clients address")
        else:
            what = f"every address given refused client {self.credentials.name!r} for good"
        return P.Unreachable(self._failure_text(f"no member accepted: {what}"))

    def _warn(self, address: str, _channel: object, error: HandshakeError) -> None:
        """Log ``address``'s refusal unless logged since the client last linked."""
        key = (address, str(error))
        if key not in self._warned:
            self._warned.add(key)
            log.warning("handshake with %s refused: %s", address, error)

    def _unreachable(self, what: str) -> Exception:
        tried = [f for a, f in self.failures.items() if a in self.addresses]
        if tried and all("storage_unavailable: " in f for f in tried):
            # Reached, but none can write its journal (a full disk): name that cause.
            return StorageUnavailable(self._failure_text(what.replace(
                "no member reachable", "no member able to write to its disk", 1)))
        kind = (P.FrameBudgetFull if self._capped and self._budget_refused
                else P.TooManyLinks if self._capped else P.Unreachable)
        return kind(self._failure_text(what))

    async def _dial(self, address: str) -> LinkStream:
        """A link to ``address``; a TLS handshake no retry can mend is a
        ``HandshakeError`` on field ``tls``."""
        try:
            return await dial(address, self._config, timeout=self._dial_timeout,
                              ssl_context=self._ssl, schemes=self._schemes,
                              on_failure=partial(self._warn, address))
        except ssl.SSLError as exc:
            refusal = tls_refusal(address, exc)
            if refusal is None:
                raise
            raise HandshakeError("tls", refusal) from exc

    async def _run(self) -> None:
        index, denied, blocked, backoff = 0, 0, 0, Backoff()
        self._unserved = self._capped = 0
        self._warned = set()
        greeted = False
        while not self._closing:
            address, self._next = self._next, None
            sought = address is not None
            if address is None:
                address = self.addresses[index % len(self.addresses)]
                index += 1
            elif address in self.addresses:  # the leader's: the one after it comes next
                index = self.addresses.index(address) + 1
            last = self.failures.get(address, "")  # while it is dialled:
            self.failures[address] = "unreachable: no answer yet" + (
                f" (when last linked: {last})" if last.startswith("link lost: ") else "")
            try:
                stream = await self._dial(address)
            except HandshakeError as exc:
                self._warn(address, None, exc)  # refused before a handshake: not said yet
                self.failures[address] = f"refused: {exc}"
                unlinkable = HTTP_ANSWERED in exc.message or exc.field == "tls"
                if unlinkable or exc.field in ("credential", "auth"):
                    blocked += unlinkable
                    denied += not unlinkable
                    self.dead_ends.add(address)
                elif exc.field == "handshake" and isinstance(
                        self.credentials, CertificateCredentials):
                    self.failures[address] = self.credentials.refusal(exc.message)
                    denied += 1
            except (OSError, TimeoutError) as exc:
                hint = NOTHING_LISTENS if getattr(exc, "errno", None) in _NOTHING else ""
                self.failures[address] = f"unreachable: {str(exc) or type(exc).__name__}{hint}"
                if sought:  # a follower still names a leader that died: ask it again later
                    await backoff.pause()
            else:
                denied = blocked = 0
                self._warned.clear()
                self.dead_ends.discard(address)
                del self.failures[address]
                link = Link(stream, address, on_notice=self._notice)
                try:
                    await self._serve(link)
                except Exception:
                    log.exception("the link to %s failed", address)
                greeted = greeted or link.greeted
                if link.refusal is None:
                    self._capped = 0
                    if self.session.bad_answers >= len(self.addresses):
                        self._unregistered()
                        return
                    if self._served(link):
                        if not self._unserved:
                            backoff.reset()
                    else:
                        await backoff.pause()
                    continue
                self.failures[address] = f"refused: {link.refusal}"
                self._capped += 1
                self._budget_refused = link.refusal_code == FRAME_BUDGET
            if index % len(self.addresses) == 0:
                if denied + blocked == len(self.addresses) and self.links == 0:
                    self._fatal = self._refused_for_good(blocked)
                    return
                if self._capped >= len(self.addresses) and not greeted:
                    self._fatal = P.TooManyLinks(self._failure_text(
                        f"every member refused a link of client {self.credentials.name!r} "
                        "over a cap"), applied=False)
                    return
                denied = blocked = 0
                await backoff.pause()

    def _unregistered(self) -> None:
        """Every member in a row answered a register with no session id of this client
        (each had registered a session it cannot use): stop linking, failing the ops
        waiting for a session, rather than register one more on every link."""
        self._fatal = P.Unreachable(self._failure_text(
            f"each of the {len(self.addresses)} member(s) answered the client's session "
            "register with no session id of this client (a hello naming it would be "
            "refused): they run a lazily-queue version this client does not speak; the "
            "client stopped linking: upgrade the client or the members, then connect it "
            "again; it was not applied"), applied=False)
        log.error("%s", self._fatal)
        self.session.unregistered(self._fatal)

    def _served(self, link: Link) -> bool:
        """Whether the client may link again at once after ``link`` ended. A member that
        took no session is tried again after a pause, and so are the members once as
        many links in a row as there are addresses were left because their member
        answered that it cannot commit (full disks): not on every answer. A link left
        for the leader's, or lost, is followed by the next at once."""
        if link.served:
            self._unserved = 0
            return True
        if link.cannot_commit:
            self._unserved += 1
            return self._unserved < len(self.addresses)
        return link.greeted
