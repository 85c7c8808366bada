"""Reaching one peer of a Mesh while its link is down: dialing or probing it with
backoff, and what stands in the way (its trouble)."""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
import time
from typing import Any

import anyio

from ..config import LinkConfig
from ..errors import (
    HandshakeError,
    HandshakeTimeoutError,
    LookupTimeoutError,
    PeerRejectedError,
)
from ..events import PeerCounters
from ..schemes import SchemeTable, dial, probe
from ..streams import LinkStream
from ._backoff import Backoff
from ._probe_notes import SHUTTING_DOWN, read_answer, refusal_note
from ._refusal_log import RefusalLog

__all__ = ["PROBE_MAX_INTERVAL", "PeerReach"]

logger = logging.getLogger("lazily_transports.mesh")

#: Longest wait between two probes of a peer that should dial us but does not.
PROBE_MAX_INTERVAL = 10.0


class PeerReach:
    """Dials one peer (``dials``), or probes one that should dial us, until a link is up.

    A link that waits to be dialed probes the peer (``lazily_transports.probe``) once it has
    been down ``probe_after`` seconds, then with backoff up to ``PROBE_MAX_INTERVAL``
    while it stays down, so that a peer refusing this node says why. ``trouble`` is
    the last dial failure or probe outcome while the link is down (None once up), a
    link dropped mid-handshake leaving the reason before it standing; ``trouble_since``
    when it came to say what it says (``time.time()``; None with it).
    A peer never reached since ``start`` is logged once at WARNING after
    ``unreachable_after`` seconds (before, a peer starting later is routine).
    A dialed connection is handed to :meth:`serve` (a ``PeerLink`` carries it).
    """

    def __init__(
        self,
        peer_id: int,
        address: str,
        *,
        config: LinkConfig,
        dials: bool,
        backoff: Backoff,
        connect_timeout: float,
        ssl_context: ssl.SSLContext | None,
        schemes: SchemeTable,
        probe_after: float | None,
        unreachable_after: float,
        refusals: RefusalLog | None,
    ) -> None:
        self.peer_id = peer_id
        self._said = RefusalLog() if refusals is None else refusals
        self._schemes = schemes
        self.address = address
        self.dials = dials
        self.counters = PeerCounters()
        self._config = config
        self._backoff = backoff
        self._connect_timeout = connect_timeout
        self._ssl_context = ssl_context
        self._dialer: asyncio.Task[None] | None = None
        self._probe_after = probe_after
        self._unreachable_after = unreachable_after
        self._started_at = 0.0
        self._said_unreachable = False
        #: The peer answered a dial or probe (refusing it, say) since the last connection
        #: ended (or since the start): it is not unreachable, it runs.
        self.answered = False
        #: When the last failed dial began (``time.monotonic``).
        self.failed_at = 0.0
        self._closed = False
        self._trouble: str | None = None
        #: The address :attr:`trouble` was met at.
        self._trouble_at = address
        #: Dials or probes of :attr:`address` that ended without a link since it was set.
        self.failed_here = 0
        self.trouble_since: float | None = None

    @property
    def up(self) -> bool:
        """Whether a connection is current."""
        raise NotImplementedError

    async def serve(self, channel: LinkStream) -> bool:
        """Carry ``channel``'s frames until it ends; False when it was not taken."""
        raise NotImplementedError

    @property
    def trouble(self) -> str | None:
        return self._trouble

    @trouble.setter
    def trouble(self, outcome: str | None) -> None:
        self._trouble_at = self.address
        if outcome != self._trouble:
            self._trouble = outcome
            self.trouble_since = None if outcome is None else time.time()

    def readdress(self, address: str) -> None:
        """Dial (or probe) ``address`` from the next attempt on."""
        self.address, self.failed_here = address, 0

    def _missed(self, address: str) -> None:
        """A dial or probe of ``address`` ended without a link."""
        if address == self.address:
            self.failed_here += 1

    @property
    def dial_failure(self) -> str | None:
        """:attr:`trouble` when it was met at the address tried now (``None`` once the
        link is moved to another address, until something is met there)."""
        return self._trouble if self._trouble_at == self.address else None

    def start(self) -> None:
        if self._dialer is not None:
            return
        self._started_at = time.monotonic()
        if self.dials:
            work, name = self._dial_forever(), f"transports-dial-{self.peer_id}"
        elif self._probe_after is not None:
            work, name = self._probe_forever(self._probe_after), f"transports-probe-{self.peer_id}"
        else:
            return
        self._dialer = asyncio.get_running_loop().create_task(work, name=name)

    async def _dial_forever(self) -> None:
        while not self._closed:
            attempted, address = time.monotonic(), self.address
            try:
                channel = await dial(
                    address, self._config, **self._reach(),
                    on_failure=lambda channel, error: None,  # said below, naming the peer
                )
            except Exception as exc:  # every failure to connect is retried after a backoff
                self._missed(address)
                self.counters.connect_failures += 1
                # When it began: a dial begun before the peer listened could not reach
                # it, however late its failure is handled (a loop busy at start-up).
                self.failed_at = attempted
                self.note_trouble(str(exc), transient=isinstance(exc, HandshakeError)
                                  and exc.field == "handshake")
                # A refused TLS handshake is a configuration problem, not routine.
                routine = isinstance(exc, OSError | TimeoutError) and not isinstance(
                    exc, ssl.SSLError)
                if routine and not isinstance(exc, HandshakeError):
                    self._routine_failure("dialing", exc)
                else:  # said once a reason, until a link is established
                    if SHUTTING_DOWN not in str(exc):  # a closing member answers nothing
                        self.answered = True
                    logger.log(self._said.level(str(exc)), "dialing peer %d at %s failed: %s",
                               self.peer_id, self.address, exc)
                await anyio.sleep(self._backoff.next())
                continue
            if await self.serve(channel):
                self._backoff.reset()  # it carried frames: a lost link is dialed at once
            else:
                self._missed(address)
            await anyio.sleep(self._backoff.next())

    def _reach(self) -> dict[str, Any]:
        """The options of a dial or a probe of this peer."""
        return {"timeout": self._connect_timeout, "ssl_context": self._ssl_context,
                "expect_peer_id": self.peer_id, "schemes": self._schemes}

    async def _probe_forever(self, delay: float) -> None:
        backoff = Backoff(delay, max(delay, PROBE_MAX_INTERVAL), jitter=0.2)
        while not self._closed:
            await anyio.sleep(backoff.next())
            if not self.up:
                await self._probe_once()
            else:
                backoff.reset()

    def _routine_failure(self, doing: str, error: object) -> None:
        """Log a peer found unreachable: at DEBUG, except once at WARNING, with what to
        check, when it was never reached (linked, or answering a dial or probe with a
        refusal, which was said) ``unreachable_after`` seconds after ``start`` (when the
        mesh started, or the peer was added to a running one)."""
        waited = time.monotonic() - self._started_at
        if (self.counters.connects or self.answered or self._said_unreachable
                or waited < self._unreachable_after):
            logger.debug("%s peer %d at %s failed: %s", doing, self.peer_id, self.address,
                         error)
            return
        self._said_unreachable = True
        check = ("its host name and the resolver (DNS server) of this host, which did not "
                 "answer its lookup (this node keeps trying it)"
                 if isinstance(error, LookupTimeoutError)
                 else "that its host name resolves here (this node keeps trying it)"
                 if isinstance(error, socket.gaierror)
                 else "that it runs and listens at this address")
        logger.warning("%s peer %d at %s failed: %s; not reached in %.0fs since this node "
                       "began trying it: check %s", doing, self.peer_id, self.address, error,
                       waited, check)

    def note_trouble(self, outcome: str, *, transient: bool = False) -> None:
        """``outcome`` is why the link is down now; a ``transient`` one (the link dropped
        mid-handshake) leaves the reason standing, such as the peer's refusal, which
        a peer refusing this node often ends its next handshakes with."""
        if not transient or self.trouble is None:
            self.trouble = outcome

    async def _probe_once(self) -> None:
        level = logging.WARNING
        transient = False
        sent_at, address = time.monotonic(), self.address
        try:
            note = await probe(address, self._config, **self._reach())
        except HandshakeError as exc:
            if not isinstance(exc, HandshakeTimeoutError) and SHUTTING_DOWN not in str(exc):
                self.answered = True
            outcome = str(exc)
            transient = exc.field == "handshake"
            if isinstance(exc, HandshakeTimeoutError) or transient:
                level = logging.DEBUG  # transient: the peer is busy or restarting
            detail: object = exc
        except ssl.SSLError as exc:
            outcome, detail = f"TLS failed: {exc}", exc
        except (OSError, TimeoutError) as exc:
            if not self.up and not self._closed:
                self._routine_failure("probing", exc)
            outcome, level, detail = f"unreachable: {exc}", logging.DEBUG, exc
        except Exception as exc:  # a probe is advisory: report anything and go on
            outcome, detail = f"probe failed: {exc!r}", exc
        else:
            self.answered = True
            if note and note.startswith(refusal_note(self.peer_id, self._config.peer_id)):
                # It dials us and refuses what it reaches after authentication (say, an
                # impostor of this id): a configuration problem, said as a refusal.
                outcome = note
                level, detail = logging.WARNING, PeerRejectedError("peer", note)
            else:
                reading = read_answer(self.peer_id, note, sent_at - self._started_at)
                outcome, level, detail = reading.outcome, reading.level, reading.outcome
        if self.up or self._closed:
            return
        self._missed(address)
        if outcome == self.trouble:
            level = logging.DEBUG  # logged once per change
        self.note_trouble(outcome, transient=transient)
        if level > logging.DEBUG or not outcome.startswith("unreachable"):
            logger.log(level, "probing peer %d at %s: %s", self.peer_id, self.address, detail)
