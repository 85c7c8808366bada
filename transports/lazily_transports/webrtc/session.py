"""Negotiating WebRTC links through one signaling room membership.

A ``SignalingSession`` is this process's membership ``(room, local peer id)``; the
listener and every dial of that peer share it. For each pair the lower peer id makes
the offer: a dialer with the lower id offers directly, a dialer with the higher id
asks the listener to offer with a ``relay`` payload
``{"lazily-webrtc": 1, "op": "connect", "token": T}``. The offering side names the
data channel ``lazily:<dialer id>:<token>``, so when it opens each end knows whether
it is the dialer's link or a listener's. Every offer gets exactly one reply, in
order: an ``answer`` or a relayed ``{"op": "refused", "reply_to": "offer"}``.
Offers and answers carry all candidates (no trickle); incoming ``ice`` frames are
applied to the newest pending negotiation with that peer. Negotiations other peers
start (their offers, their ``connect`` requests) are capped in all and per peer; more
are refused with a reason starting ``busy:``.
"""

from __future__ import annotations

import asyncio
import logging
import re
import secrets
from collections import deque
from collections.abc import Callable
from typing import Any

from aiortc import RTCDataChannel, RTCPeerConnection, RTCSessionDescription
from aiortc.sdp import candidate_from_sdp

from .._core._admission import LogLimiter
from ..config import LinkConfig
from ..errors import AddressError
from .channel import PROTOCOL, WebRTCChannel, close_peer_connection
from .ice import IceSettings, install_gatherer, new_peer_connection
from .pending import Accept, Pending
from .signaling import (
    Answer,
    Error,
    ForwardedAnswer,
    ForwardedIce,
    ForwardedOffer,
    ForwardedRelay,
    Offer,
    PeerJoined,
    PeerLeft,
    Relay,
    ServerFrame,
    SignalingClient,
)

__all__ = ["SignalingSession"]

_log = logging.getLogger("lazily_transports.webrtc")

_RELAY_TAG = "lazily-webrtc"
_LABEL = re.compile(r"lazily:(\d{1,16}):([A-Za-z0-9_-]{1,64})")
_TOKEN = re.compile(r"[A-Za-z0-9_-]{1,64}")
_ERROR_TARGET = re.compile(
    r"peer (\d+) is not in this session|peer \d+ is not allowed to signal peer (\d+)"
    r"|peer (\d+) is not taking frames as fast as they come; this one was dropped"
)
#: Negotiations other peers may have started with this one at once: each holds a peer
#: connection (sockets) until it opens or times out. More are refused ("busy").
MAX_ANSWERING = 64
MAX_ANSWERING_PER_PEER = 8
#: Lines about what other peers' frames got wrong, logged per 10 s (the rest counted).
_COMPLAINTS = 10

class SignalingSession:
    """This process's membership of one signaling room as one peer id."""

    def __init__(
        self,
        client: SignalingClient,
        url: str,
        ice: IceSettings,
        negotiation_timeout: float,
        on_closed: Callable[[SignalingSession], None],
    ) -> None:
        self.client = client
        self.url = url
        self.peer = client.peer
        self.roster: set[int] = set(client.roster)
        self.refs = 0
        self.listener: tuple[LinkConfig, Accept] | None = None
        self._ice = ice
        self._timeout = negotiation_timeout
        self._on_closed = on_closed
        self._answers_due: dict[int, deque[Pending]] = {}
        self._requests: dict[str, Pending] = {}
        self._negotiating: dict[RTCPeerConnection, Pending] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False
        self._complaints = LogLimiter(burst=_COMPLAINTS)
        self.closed = asyncio.Event()
        """Set once the membership ended (left, or the signaling connection was lost)."""
        self._reader = asyncio.get_running_loop().create_task(self._read())

    def link_address(self, peer: int) -> str:
        return f"webrtc+{self.url}?peer={peer}"

    # -- dialing ------------------------------------------------------------------------

    async def dial(self, target: int, config: LinkConfig) -> WebRTCChannel:
        """Open a link to ``target``; the caller bounds the wait."""
        if self._closed:
            raise ConnectionError(f"signaling session {self.url} is closed")
        if target == self.peer:
            raise AddressError(f"cannot dial our own peer id {target}")
        if target not in self.roster:
            raise ConnectionRefusedError(f"peer {target} is not in signaling room {self.url}")
        loop = asyncio.get_running_loop()
        pending = Pending(target, config, future=loop.create_future())
        token = secrets.token_urlsafe(12)
        try:
            if self.peer < target:
                await self._offer(pending, dialer=self.peer, token=token)
            else:
                self._requests[token] = pending
                await self._relay(target, op="connect", token=token)
            assert pending.future is not None
            return await pending.future
        finally:
            self._requests.pop(token, None)
            if not pending.done:
                pending.abandoned = True
                await self._discard(pending)

    async def _offer(self, pending: Pending, *, dialer: int, token: str) -> None:
        pc = new_peer_connection(self._ice)
        dc = pc.createDataChannel(f"lazily:{dialer}:{token}", ordered=True, protocol=PROTOCOL)
        pending.pc = pc
        assert pending.config is not None
        pending.channel = WebRTCChannel(pc, dc, pending.config, self.link_address(pending.peer))
        self._negotiating[pc] = pending
        install_gatherer(pc, self._ice)
        await pc.setLocalDescription(await pc.createOffer())
        dc.on("open", lambda: self._opened(pending))
        self._answers_due.setdefault(pending.peer, deque()).append(pending)
        await self.client.send(Offer(pending.peer, pc.localDescription.sdp))
        self._watch(pending)

    def _opened(self, pending: Pending) -> None:
        if pending.pc is not None:
            self._negotiating.pop(pending.pc, None)
        if pending.abandoned or pending.done or pending.channel is None:
            self._spawn(self._discard(pending))
            return
        pending.resolve(pending.channel)

    # -- the reader ---------------------------------------------------------------------

    async def _read(self) -> None:
        reason = "signaling connection closed"
        try:
            async for frame in self.client:
                await self._dispatch(frame)
        except Exception as exc:
            reason = f"signaling connection failed: {exc}"
            _log.warning("%s: %s", self.url, reason)
        finally:
            self._fail_peer(None, ConnectionError(reason))
            self._mark_closed()

    def _mark_closed(self) -> None:
        if not self._closed:
            self._closed = True
            self.closed.set()
            self._on_closed(self)

    async def _dispatch(self, frame: ServerFrame) -> None:
        match frame:
            case PeerJoined(peer=peer):
                self.roster.add(peer)
            case PeerLeft(peer=peer):
                self.roster.discard(peer)
                self._fail_peer(peer, ConnectionRefusedError(f"peer {peer} left {self.url}"))
            case ForwardedOffer(from_=peer, sdp=sdp):
                await self._answer(peer, sdp)
            case ForwardedAnswer(from_=peer, sdp=sdp):
                await self._on_answer(peer, sdp)
            case ForwardedIce(from_=peer, candidate=candidate):
                await self._on_ice(peer, candidate)
            case ForwardedRelay(from_=peer, payload=payload):
                await self._on_relay(peer, payload)
            case Error(code=code, message=message):
                self._on_error(code, message)
            case _:
                self._complain(logging.WARNING, "unexpected signaling frame %r", frame)

    async def _answer(self, peer: int, sdp: str) -> None:
        wanted = self.listener is not None or any(p.peer == peer for p in self._requests.values())
        if not wanted:
            await self._relay(peer, op="refused", reply_to="offer", reason="not listening")
            return
        busy = self._busy(peer)
        if busy is not None:
            await self._relay(peer, op="refused", reply_to="offer", reason=busy)
            return
        pc = new_peer_connection(self._ice)
        pending = Pending(peer, None, pc=pc)
        self._negotiating[pc] = pending
        pc.on("datachannel", lambda dc: self._on_datachannel(pending, dc))
        try:
            async with asyncio.timeout(self._timeout):
                await pc.setRemoteDescription(RTCSessionDescription(sdp=sdp, type="offer"))
                install_gatherer(pc, self._ice)
                await pc.setLocalDescription(await pc.createAnswer())
        except Exception as exc:
            self._complain(logging.WARNING, "cannot answer peer %s: %r", peer, exc)
            await self._discard(pending)
            await self._relay(peer, op="refused", reply_to="offer", reason="bad offer")
            return
        await self.client.send(Answer(peer, pc.localDescription.sdp))
        self._watch(pending)

    def _on_datachannel(self, pending: Pending, dc: RTCDataChannel) -> None:
        pc, peer = pending.pc, pending.peer
        assert pc is not None
        self._negotiating.pop(pc, None)
        match = _LABEL.fullmatch(dc.label)
        problem = None
        if pending.done or pending.channel is not None:
            problem = "a second data channel"
        elif match is None or dc.protocol != PROTOCOL:
            problem = f"data channel {dc.label!r}/{dc.protocol!r}"
        elif not dc.ordered or dc.maxRetransmits is not None or dc.maxPacketLifeTime is not None:
            problem = "an unordered or unreliable data channel"
        if problem is not None or match is None:
            self._complain(logging.WARNING, "peer %s opened %s; closing", peer, problem)
            dc.close()
            if not pending.done:
                pending.finish()
                self._spawn(self._close_pc(pc))
            return
        dialer, token = int(match.group(1)), match.group(2)
        target: Pending | None = None
        if dialer == self.peer:
            request = self._requests.get(token)
            if request is not None and request.peer == peer and not request.done:
                target = request
        elif dialer == peer and self.listener is not None:
            target = Pending(peer, self.listener[0], on_open=self.listener[1])
        if target is None:
            self._complain(logging.INFO, "unexpected link %r from peer %s; closing", dc.label,
                           peer)
            pending.finish()
            self._spawn(self._close_pc(pc))
            return
        pending.finish()
        assert target.config is not None
        target.resolve(WebRTCChannel(pc, dc, target.config, self.link_address(peer)))

    async def _on_answer(self, peer: int, sdp: str) -> None:
        queue = self._answers_due.get(peer)
        if not queue:
            self._complain(logging.WARNING, "unsolicited answer from peer %s", peer)
            return
        pending = queue.popleft()
        if pending.abandoned or pending.done or pending.pc is None:
            await self._discard(pending)
            return
        try:
            await pending.pc.setRemoteDescription(RTCSessionDescription(sdp=sdp, type="answer"))
        except Exception as exc:
            pending.fail(ConnectionError(f"peer {peer} sent an unusable answer: {exc!r}"))
            await self._discard(pending)

    async def _on_ice(self, peer: int, candidate: str) -> None:
        pending = next((p for p in reversed(self._negotiating.values()) if p.peer == peer), None)
        if pending is None or pending.pc is None or not candidate:
            return
        try:
            ice = candidate_from_sdp(candidate.removeprefix("candidate:"))
            ice.sdpMLineIndex = 0
            await pending.pc.addIceCandidate(ice)
        except Exception as exc:
            self._complain(logging.INFO, "ignoring ICE candidate from peer %s: %r", peer, exc)

    async def _on_relay(self, peer: int, payload: Any) -> None:
        if not isinstance(payload, dict) or payload.get(_RELAY_TAG) != 1:
            _log.debug("%s: ignoring relay payload from peer %s", self.url, peer)
            return
        op, token = payload.get("op"), payload.get("token")
        if op == "connect" and isinstance(token, str) and _TOKEN.fullmatch(token):
            reason = ("not listening" if self.listener is None else
                      "the lower id offers" if peer < self.peer else self._busy(peer))
            if reason is not None:
                await self._relay(
                    peer, op="refused", reply_to="connect", token=token, reason=reason
                )
                return
            assert self.listener is not None
            config, accept = self.listener
            pending = Pending(peer, config, on_open=accept)
            try:
                await self._offer(pending, dialer=peer, token=token)
            except Exception as exc:
                self._complain(logging.WARNING, "cannot offer to peer %s: %r", peer, exc)
                await self._discard(pending)
        elif op == "refused":
            reason = str(payload.get("reason", "refused"))[:200]
            error = ConnectionRefusedError(f"peer {peer} refused the link: {reason}")
            if payload.get("reply_to") == "offer":
                queue = self._answers_due.get(peer)
                if queue:
                    pending = queue.popleft()
                    pending.fail(error)
                    await self._discard(pending)
            elif isinstance(token, str) and token in self._requests:
                request = self._requests[token]
                if request.peer == peer:
                    request.fail(error)
        else:
            self._complain(logging.INFO, "ignoring relay op %r from peer %s", op, peer)

    def _busy(self, peer: int) -> str | None:
        """Why a negotiation ``peer`` starts is refused now (``None``: it is not)."""
        theirs = [p.peer for p in self._negotiating.values() if p.future is None]
        if len(theirs) >= MAX_ANSWERING:
            return f"busy: {len(theirs)} negotiations in flight"
        if theirs.count(peer) >= MAX_ANSWERING_PER_PEER:
            return f"busy: {MAX_ANSWERING_PER_PEER} negotiations with peer {peer} in flight"
        return None

    def _on_error(self, code: str, message: str) -> None:
        match = _ERROR_TARGET.fullmatch(message)
        if match is None:
            self._complain(logging.WARNING, "signaling error %s: %s", code, message)
            return
        peer = int(match.group(1) or match.group(2) or match.group(3))
        self._fail_peer(peer, ConnectionRefusedError(f"signaling refused ({code}): {message}"))

    # -- helpers ------------------------------------------------------------------------

    def _complain(self, level: int, message: str, *args: object) -> None:
        """Log what another peer's frames got wrong, at most ``_COMPLAINTS`` lines per
        10 s: anyone in the room can send them."""
        if self._complaints.allow():
            unlogged = self._complaints.take_suppressed()
            more = f" ({unlogged} more such lines were not logged)" if unlogged else ""
            _log.log(level, "%s: " + message + more, self.url, *args)

    async def _relay(self, peer: int, **payload: Any) -> None:
        await self.client.send(Relay(peer, {_RELAY_TAG: 1, **payload}))

    def _watch(self, pending: Pending) -> None:
        if not pending.done:
            loop = asyncio.get_running_loop()
            pending.timer = loop.call_later(self._timeout, self._expire, pending)

    def _expire(self, pending: Pending) -> None:
        pending.timer = None
        if not pending.done:
            pending.fail(TimeoutError(f"WebRTC negotiation with peer {pending.peer} timed out"))
            self._spawn(self._discard(pending))

    def _fail_peer(self, peer: int | None, exc: Exception) -> None:
        """Fail what waits on signaling from ``peer`` (every negotiation when None)."""
        doomed = [p for p in self._requests.values() if peer in (None, p.peer)]
        for key in [k for k in self._answers_due if peer in (None, k)]:
            doomed.extend(self._answers_due.pop(key))
        if peer is None:
            doomed.extend(self._negotiating.values())
        for pending in doomed:
            if not pending.done:
                pending.fail(exc)
            self._spawn(self._discard(pending))

    async def _discard(self, pending: Pending) -> None:
        pending.finish()
        if pending.pc is not None:
            self._negotiating.pop(pending.pc, None)
            if pending.channel is not None:
                await pending.channel.aclose()
            await self._close_pc(pending.pc)

    @staticmethod
    async def _close_pc(pc: RTCPeerConnection | None) -> None:
        if pc is not None:
            await close_peer_connection(pc)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def aclose(self) -> None:
        """Leave the room and abandon negotiations in flight (open links stay up)."""
        self._mark_closed()
        await self.client.aclose()
        self._reader.cancel()
        await asyncio.gather(self._reader, return_exceptions=True)
        self._fail_peer(None, ConnectionError(f"signaling session {self.url} closed"))
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
