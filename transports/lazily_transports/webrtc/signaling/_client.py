"""A signaling client: joins a room over WebSocket, then sends and receives typed frames."""

from __future__ import annotations

import ssl
from collections.abc import Sequence
from types import TracebackType
from typing import Self

import anyio
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus, InvalidURI

from ._frames import (
    ClientFrame,
    Error,
    Join,
    Leave,
    ServerFrame,
    SignalingFrameError,
    Welcome,
    decode_server_frame,
    dumps,
    loads,
)

__all__ = ["SignalingClient", "SignalingError"]


class SignalingError(Exception):
    """The signaling server refused the join (``code`` is the error frame's code)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class SignalingClient:
    """A joined member of one signaling room.

    ``connect`` sends ``join`` and waits for ``welcome`` (raising
    ``SignalingError`` on an ``error`` reply). ``receive`` yields server frames
    in order, including ``error`` frames for refused sends; it raises
    ``anyio.EndOfStream`` once the connection is closed. A frame from the server
    that does not match the grammar closes the connection and raises
    ``SignalingFrameError``.
    """

    def __init__(self, ws: ClientConnection, welcome: Welcome) -> None:
        self._ws = ws
        self.peer = welcome.peer
        self.roster = welcome.peers
        """Peers present when this client joined, ascending."""

    @classmethod
    async def connect(
        cls,
        url: str,
        peer: int,
        *,
        capabilities: Sequence[str] | None = None,
        timeout: float = 10.0,
        max_frame_size: int = 1 << 20,
        ssl_context: ssl.SSLContext | None = None,
        token: str | None = None,
    ) -> SignalingClient:
        """Open ``url`` (``ws://host:port/room`` or ``wss://``) and join as ``peer``;
        ``token`` is sent as ``Authorization: Bearer`` to a server that requires one
        (a refusal raises ``SignalingError`` with code ``unauthorized``)."""
        join = Join(peer, tuple(capabilities) if capabilities is not None else None)
        headers = None if token is None else {"Authorization": f"Bearer {token}"}
        try:
            ws = await connect(
                url,
                open_timeout=timeout,
                max_size=max_frame_size,
                compression=None,
                ssl=ssl_context,
                additional_headers=headers,
            )
        except InvalidURI as exc:
            raise ValueError(f"invalid signaling URL {url!r}: {exc}") from None
        except InvalidStatus as exc:
            if exc.response.status_code in (401, 403):
                reason = "no token was sent" if token is None else "the token was refused"
                raise SignalingError("unauthorized", f"signaling server {url!r} requires a "
                                     f"token and {reason}") from None
            raise ConnectionError(f"cannot reach signaling server {url!r}: {exc}") from exc
        except (OSError, InvalidHandshake, TimeoutError) as exc:
            raise ConnectionError(f"cannot reach signaling server {url!r}: {exc}") from exc
        try:
            await ws.send(dumps(join))
            with anyio.fail_after(timeout):
                reply = await _read(ws)
            if isinstance(reply, Error):
                raise SignalingError(reply.code, reply.message)
            if not isinstance(reply, Welcome) or reply.peer != peer:
                got = f"a welcome for peer {reply.peer}" if isinstance(reply, Welcome) else (
                    f"a {type(reply).__name__} frame"
                )
                raise SignalingFrameError(f"expected a welcome for peer {peer}, got {got}")
        except BaseException:
            await ws.close()
            raise
        return cls(ws, reply)

    async def send(self, frame: ClientFrame) -> None:
        """Send one client frame; raises ``anyio.ClosedResourceError`` once closed."""
        try:
            await self._ws.send(dumps(frame))
        except ConnectionClosed:
            raise anyio.ClosedResourceError from None

    async def receive(self) -> ServerFrame:
        """The next server frame."""
        return await _read(self._ws)

    async def aclose(self) -> None:
        """Leave the room (best effort) and close the connection."""
        try:
            await self._ws.send(dumps(Leave()))
        except ConnectionClosed:
            pass
        await self._ws.close()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> ServerFrame:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


async def _read(ws: ClientConnection) -> ServerFrame:
    try:
        message = await ws.recv()
    except ConnectionClosed:
        raise anyio.EndOfStream from None
    try:
        if isinstance(message, bytes):
            raise SignalingFrameError("signaling frames are JSON text, got a binary message")
        return decode_server_frame(loads(message))
    except SignalingFrameError as exc:
        await ws.close(1007 if not isinstance(message, bytes) else 1003, "bad signaling frame")
        raise SignalingFrameError(f"bad frame from the signaling server: {exc}") from None
