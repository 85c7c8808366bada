"""Runs the handshake, then the handler, for each raw channel a listener accepts."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from ..abc import DataChannel, LinkAttribute
from ..config import LinkConfig
from ..errors import HandshakeError, ProbeAnswered
from ..streams import LinkStream, establish
from ._admission import AdmissionGate, LogLimiter
from ._authentication import CredentialLookup, PeerFilter, PeerVetter, ProbeAnswer
from ._digest import RefusalDigest
from ._refusal_log import RefusalLog

__all__ = ["Acceptor"]

logger = logging.getLogger("lazily_transports.listener")

#: Refused incoming handshakes logged per interval; the rest are counted in the next line.
_REFUSALS_LOGGED = 10


class Acceptor:
    """Runs handshake and handler for each raw channel a listener accepts.

    Connections over the admission caps are closed at once (or, when every slot is
    taken, one of the busiest source's instead: :class:`AdmissionGate`); refused
    handshakes are logged at most ``_REFUSALS_LOGGED`` times per interval, a reason already logged
    since the last established link at DEBUG (``refusals``); handshakes not completed
    in time (a flood of idle connections) are summarised (:class:`RefusalDigest`).
    """

    def __init__(
        self,
        config: LinkConfig,
        handler: Callable[[LinkStream], Awaitable[None]],
        accept_peer: PeerFilter | None,
        admit: PeerVetter | None,
        answer_probe: ProbeAnswer | None,
        label: str,
        credentials: CredentialLookup | None = None,
        refusals: RefusalLog | None = None,
    ) -> None:
        self._credentials = credentials
        self._said = RefusalLog() if refusals is None else refusals
        self._config = config
        self._handler = handler
        self._accept_peer = accept_peer
        self._admit = admit
        self._answer_probe = answer_probe
        self.gate = AdmissionGate(
            config.max_pending_handshakes, config.max_pending_per_source, label=label
        )
        self._refusals = LogLimiter(burst=_REFUSALS_LOGGED)
        self._timeouts = RefusalDigest(logging.getLogger("lazily_transports.handshake"))
        self._tasks: set[asyncio.Task[None]] = set()
        self._closing = False

    def accept(self, raw: DataChannel) -> None:
        loop = asyncio.get_running_loop()
        if self._closing or not self.gate.admit(raw.source, raw, raw.abort):
            task = loop.create_task(raw.aclose())
        else:
            task = loop.create_task(self._serve(raw))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _serve(self, raw: DataChannel) -> None:
        source = raw.source
        try:
            stream = await establish(
                raw,
                self._config,
                initiator=False,
                accept_peer=self._accept_peer,
                admit=self._admit,
                answer_probe=self._answer_probe,
                on_failure=self._log_refusal,
                credentials=self._credentials,
            )
        except HandshakeError:
            return  # establish reported it and closed the channel
        except ProbeAnswered as answered:
            logger.debug("answered a probe from peer %d", answered.peer_id)
            return
        finally:
            self.gate.release(source, raw)
        if stream.extra(LinkAttribute.credential, None) is None:
            self._said.linked()
        try:
            await self._handler(stream)
        except Exception:
            logger.exception("handler for peer %s failed", stream.extra(LinkAttribute.peer_id))
        finally:
            await stream.aclose()

    def _log_refusal(self, raw: DataChannel, error: HandshakeError) -> None:
        self.gate.refused_handshakes += 1
        if error.field == "timeout":
            self._timeouts.add(raw.remote_address, error)
            return
        if self._said.level(str(error)) < logging.WARNING:
            logging.getLogger("lazily_transports.handshake").debug(
                "handshake with %s refused: %s", raw.remote_address, error)
            return
        if not self._refusals.allow():
            return
        unlogged = self._refusals.take_suppressed()
        if unlogged:
            logger.warning("%d more refused handshakes were not logged", unlogged)
        logging.getLogger("lazily_transports.handshake").warning(
            "handshake with %s refused: %s", raw.remote_address, error
        )

    async def aclose(self) -> None:
        self._closing = True
        self._timeouts.flush()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
