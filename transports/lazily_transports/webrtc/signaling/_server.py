"""A WebSocket signaling server: one ``RoomCore`` per URL path.

Protocol decisions around the pure room:

* a text message that is JSON but not a valid client frame (unknown type,
  wrong or extra fields, a client-supplied ``from``) is answered with
  ``error{code: "malformed_frame"}`` and the connection stays open;
* a binary message, or text that is not JSON, is answered with the same error
  and the connection is then closed (code 1003 / 1007): the other end does not
  speak this protocol;
* a message over ``max_frame_size`` closes the connection (code 1009);
* a connection whose outbound queue (``outbound_queue`` frames, ``outbound_bytes``)
  overflows with the server's own frames is closed (code 1008), so a slow reader never
  stalls the room; frames other peers address to it may fill half of it, and one that
  does not fit is dropped and its sender gets ``error{code: "target_busy"}``, so no
  peer can have another closed by flooding it;
* with a ``token``, the WebSocket upgrade must carry ``Authorization: Bearer TOKEN``
  (401 otherwise): only holders of the token can join rooms. It does not replace the
  peers' own authentication, which runs over the links the server helps set up;
* a connection still in its HTTP upgrade (token check included) holds one of
  ``max_pending`` slots, at most ``max_pending_per_source`` per IP address, for at
  most ``open_timeout`` seconds; over a cap it is closed at once, so strangers without
  the token cannot take every file descriptor;
* refusals are logged at most ``_REFUSALS_LOGGED`` times per 10 s, and the WebSocket
  library's line per connection only at DEBUG, so strangers cannot fill the log.
"""

from __future__ import annotations

import hmac
import logging
import ssl
from collections.abc import Callable
from http import HTTPStatus
from types import TracebackType
from typing import Self

import anyio
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from ..._core._admission import AdmissionGate, LogLimiter, QuietServerLog
from ..._core._gated import GatedConnection, gated_connection, tls_arguments
from ._frames import (
    Error,
    ForwardedAnswer,
    ForwardedIce,
    ForwardedOffer,
    ForwardedRelay,
    ServerFrame,
    SignalingFrameError,
    dumps,
    loads,
)
from ._room import ErrorCode, Output, Permissions, RoomCore

__all__ = ["SignalingServer"]

_log = logging.getLogger(__name__)

_CLOSE_NORMAL = 1000
_CLOSE_UNSUPPORTED = 1003
_CLOSE_INVALID = 1007
_CLOSE_POLICY = 1008
#: Frames one peer sends another through the server.
_DIRECTED = (ForwardedOffer, ForwardedAnswer, ForwardedIce, ForwardedRelay)
#: Refused connections logged per interval (``LogLimiter``); the rest are counted.
_REFUSALS_LOGGED = 10


class _Client:
    """One accepted WebSocket with an outbound queue drained by ``pump``, bounded in
    frames (``capacity``) and in bytes (``max_bytes``). Frames other peers address to it
    may fill only half of it, so the server's own always find room."""

    def __init__(self, ws: ServerConnection, capacity: int, max_bytes: int) -> None:
        self.ws = ws
        self._send, self._recv = anyio.create_memory_object_stream[str](capacity)
        self._capacity = capacity
        self._max_bytes = max_bytes
        self._frames = 0
        self._queued = 0
        self._close_code = _CLOSE_NORMAL
        self._close_reason = ""
        self._shut = False

    def offer(self, frame: ServerFrame, *, share: float = 1.0) -> bool:
        """Queue ``frame`` if it fits in ``share`` of the queue; False (nothing queued)
        otherwise, or once the queue is closed."""
        text = dumps(frame)
        if self._frames and (self._frames + 1 > self._capacity * share
                             or self._queued + len(text) > self._max_bytes * share):
            return False
        try:
            self._send.send_nowait(text)
        except (anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
            return False
        self._frames += 1
        self._queued += len(text)
        return True

    def deliver(self, frame: ServerFrame) -> None:
        """Queue a frame of the server's own; a reader too slow to take it is closed."""
        if not self.offer(frame) and not self._shut:
            self.shut(_CLOSE_POLICY, "outbound queue overflow")

    def shut(self, code: int = _CLOSE_NORMAL, reason: str = "") -> None:
        """Stop accepting frames; ``pump`` flushes what is queued, then closes."""
        if not self._shut:
            self._shut = True
            self._close_code, self._close_reason = code, reason
            self._send.close()

    async def pump(self) -> None:
        try:
            async with self._recv:
                async for text in self._recv:
                    await self.ws.send(text)
                    self._frames -= 1
                    self._queued -= len(text)
            await self.ws.close(self._close_code, self._close_reason)
        except ConnectionClosed:
            pass


class SignalingServer:
    """Hosts signaling rooms over WebSocket; the URL path names the room.

    ``permissions`` is one policy for every room or a function of the room path.
    Use as ``async with SignalingServer(...) as server`` (binds ``host:port``;
    port 0 picks a free one) and connect clients to ``server.url + "/room"``.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        permissions: Permissions | Callable[[str], Permissions] | None = None,
        max_frame_size: int = 1 << 20,
        outbound_queue: int = 1024,
        outbound_bytes: int = 8 << 20,
        token: str | None = None,
        ssl_context: ssl.SSLContext | None = None,
        max_pending: int = 128,
        max_pending_per_source: int = 8,
        open_timeout: float = 5.0,
    ) -> None:
        if max_frame_size <= 0 or outbound_queue <= 0 or outbound_bytes <= 0:
            raise ValueError("max_frame_size, outbound_queue and outbound_bytes must be positive")
        if token is not None and not token:
            raise ValueError("token must be a non-empty string (or None: no token required)")
        self._token = token
        self._ssl_context = ssl_context
        self.refused = 0
        self._refusals = LogLimiter(burst=_REFUSALS_LOGGED)
        self._host = host
        self._port = port
        self._permissions = permissions
        self._max_frame_size = max_frame_size
        self._outbound_queue = outbound_queue
        self._outbound_bytes = outbound_bytes
        self._open_timeout = open_timeout
        #: Connections still in their HTTP upgrade, capped in all and per IP address.
        self.upgrades = AdmissionGate(max_pending, max_pending_per_source,
                                      label=f"signaling {host}:{port} (HTTP upgrade)")
        self._rooms: dict[str, RoomCore[_Client]] = {}
        self._members: dict[str, int] = {}
        self._server: Server | None = None

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the signaling server is not started")
        port: int = next(iter(self._server.sockets)).getsockname()[1]
        return port

    @property
    def url(self) -> str:
        """``ws://host:port`` of the bound server (append ``/room``)."""
        host = f"[{self._host}]" if ":" in self._host else self._host
        scheme = "wss" if self._ssl_context is not None else "ws"
        return f"{scheme}://{host}:{self.port}"

    def room(self, path: str) -> RoomCore[_Client] | None:
        """The live room at ``path`` (for inspection), or None."""
        return self._rooms.get(path)

    async def start(self) -> None:
        if self._server is not None:
            raise RuntimeError("the signaling server is already started")
        self._server = await serve(
            self._handle,
            self._host,
            self._port,
            max_size=self._max_frame_size,
            compression=None,
            process_request=self._authorize if self._token is not None else None,
            logger=QuietServerLog("lazily_transports.signaling.server"),
            open_timeout=self._open_timeout,
            create_connection=gated_connection(self.upgrades, self._ssl_context,
                                               self._open_timeout),
            **tls_arguments(self._ssl_context),
        )

    def _authorize(self, connection: ServerConnection, request: Request) -> Response | None:
        assert self._token is not None
        scheme, _, presented = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(presented.strip().encode(),
                                                              self._token.encode()):
            return None
        self.refused += 1
        if self._refusals.allow():
            unlogged = self._refusals.take_suppressed()
            more = f" ({unlogged} more refused since the last such line)" if unlogged else ""
            _log.warning("refused a signaling connection from %s: missing or wrong token%s",
                         connection.remote_address, more)
        return connection.respond(HTTPStatus.UNAUTHORIZED, "a signaling token is required\n")

    async def aclose(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
            await server.wait_closed()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def _policy(self, path: str) -> Permissions:
        if self._permissions is None:
            return Permissions()
        if isinstance(self._permissions, Permissions):
            return self._permissions
        return self._permissions(path)

    async def _handle(self, ws: ServerConnection) -> None:
        if isinstance(ws, GatedConnection):
            ws.release_slot()
        path = ws.request.path.partition("?")[0] if ws.request is not None else "/"
        room = self._rooms.get(path)
        if room is None:
            room = self._rooms[path] = RoomCore(self._policy(path))
        self._members[path] = self._members.get(path, 0) + 1
        client = _Client(ws, self._outbound_queue, self._outbound_bytes)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(client.pump)
                try:
                    await self._read(room, client)
                finally:
                    client.shut()
        finally:
            _route(room.disconnect(client))
            self._members[path] -= 1
            if not self._members[path]:
                del self._members[path]
                del self._rooms[path]

    async def _read(self, room: RoomCore[_Client], client: _Client) -> None:
        try:
            async for message in client.ws:
                if isinstance(message, bytes):
                    _refuse(client, "signaling frames are JSON text, got a binary message")
                    client.shut(_CLOSE_UNSUPPORTED, "binary message")
                    return
                try:
                    wire = loads(message)
                except SignalingFrameError as exc:
                    _refuse(client, str(exc))
                    client.shut(_CLOSE_INVALID, "not JSON")
                    return
                _route(room.feed_wire(client, wire), client, room)
        except ConnectionClosed as exc:
            _log.debug("signaling connection closed: %s", exc)


def _refuse(client: _Client, message: str) -> None:
    client.deliver(Error(ErrorCode.MALFORMED_FRAME, message))


def _route(outputs: list[Output[_Client]], sender: _Client | None = None,
           room: RoomCore[_Client] | None = None) -> None:
    """Deliver ``outputs``. A frame ``sender`` addressed to another peer is dropped when
    it does not fit in that peer's share for such frames, and the sender told
    (``target_busy``) if that fits in its own: one peer's frames never get another
    closed."""
    for target, frame in outputs:
        if sender is None or target is sender or not isinstance(frame, _DIRECTED):
            target.deliver(frame)
        elif not target.offer(frame, share=0.5):
            peer = None if room is None else room.peer_of(target)
            sender.offer(Error(ErrorCode.TARGET_BUSY, f"peer {peer} is not taking frames as "
                               "fast as they come; this one was dropped"), share=0.5)
