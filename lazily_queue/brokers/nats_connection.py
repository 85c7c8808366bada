"""What guards a NATS connection: addresses without credentials in messages, a
``tls://`` server refused unless it requires TLS, publishes held (not buffered) while
the connection is re-established, and who is told when it drops and comes back."""

from __future__ import annotations

import asyncio
import contextlib
import json
import weakref
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

from nats.aio.client import Client as NATS

from .errors import BrokerUnavailable


def redacted(url: str) -> str:
    parts = urlsplit(url)
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{parts.hostname or '?'}{port}"


#: Each chained ``disconnected_cb`` and the one it calls after its own.
_CHAINED_TO: weakref.WeakKeyDictionary[Callable[[], Awaitable[None]],
                                       Callable[[], Awaitable[None]] | None] = (
    weakref.WeakKeyDictionary())


class Outages:
    """A connection's ``disconnected_cb`` and ``reconnected_cb``: ``reconnected`` is set
    once it is back (see :func:`hold_publishes`), and every listener is called when it
    drops and again when it is back (what the server announced meanwhile was missed).

    On a connection whose callbacks belong to someone else (the application's own),
    :meth:`follow` it instead: :meth:`check`, called before each operation, calls every
    listener once the connection has reconnected since the last check, and ``dropped``
    is called from the connection's ``disconnected_cb``, chained before the
    application's."""

    def __init__(self) -> None:
        self.reconnected = asyncio.Event()
        self.listeners: list[Callable[[], None]] = []
        #: Called when the connection drops (before the listeners): the answers it
        #: waits for will not come.
        self.dropped: list[Callable[[], None]] = []
        self._followed: NATS | None = None
        self._chained: Callable[[], Awaitable[None]] | None = None
        self._theirs: Callable[[], Awaitable[None]] | None = None
        self._reconnects = 0

    def follow(self, nc: NATS) -> Outages:
        """Tell the listeners of ``nc``'s reconnections as :meth:`check` sees them, and
        call ``dropped`` when it drops: its ``disconnected_cb`` (nats-py keeps one, set
        at ``connect``, with no way to add another) becomes one that calls ``dropped``
        and then the application's, which is put back by :meth:`unfollow`."""
        self._followed = nc
        self._reconnects = nc.stats["reconnects"]
        self._chain(nc)
        return self

    def _chain(self, nc: NATS) -> None:
        """Make ``nc``'s ``disconnected_cb`` call ``dropped`` and then the one it had."""
        if not hasattr(nc, "_disconnected_cb"):  # a nats-py without it: answers time out
            return
        theirs = self._theirs = nc._disconnected_cb

        async def chained() -> None:
            self._drop()
            if theirs is not None:
                await theirs()

        _CHAINED_TO[chained] = theirs
        nc._disconnected_cb = self._chained = chained

    def _in_chain(self, nc: NATS) -> bool:
        """Whether ``nc``'s ``disconnected_cb`` calls ours, at once or through those
        chained before it (another storage following the same connection)."""
        callback = nc._disconnected_cb
        while callback is not None:
            if callback is self._chained:
                return True
            callback = _CHAINED_TO.get(callback)
        return False

    def unfollow(self) -> None:
        """Call ``dropped`` no more; put the application's ``disconnected_cb`` back
        unless the connection's was replaced since :meth:`follow`."""
        self.dropped.clear()
        nc, self._followed = self._followed, None
        chained, self._chained = self._chained, None
        if nc is not None and chained is not None and nc._disconnected_cb is chained:
            nc._disconnected_cb = self._theirs

    def check(self) -> None:
        """Call every listener when the followed connection reconnected since the last
        check (a no-op for a connection whose callbacks are this object's), and chain
        its ``disconnected_cb`` again when ours is no longer called by it (``nc.connect()``
        sets it: a storage may be made on a connection not yet connected)."""
        nc = self._followed
        if nc is None:
            return
        if self._chained is not None and not self._in_chain(nc):
            self._chain(nc)
        if nc.stats["reconnects"] != self._reconnects:
            self._reconnects = nc.stats["reconnects"]
            self._tell()

    async def disconnected_cb(self) -> None:
        self._drop()
        self._tell()

    def _drop(self) -> None:
        for dropped in list(self.dropped):
            dropped()

    async def reconnected_cb(self) -> None:
        self.reconnected.set()
        self._tell()

    def _tell(self) -> None:
        for listener in list(self.listeners):
            listener()


def hold_publishes(nc: NATS, reconnected: asyncio.Event, timeout: float) -> None:
    """Make ``nc``'s publishes (requests, pulls and acks included) made while it
    reconnects wait for the connection, up to ``timeout`` seconds, instead of going to
    nats-py's buffer: with ``pending_size`` 0 one not sent by then raises
    ``OutboundBufferLimitError`` (nothing sent), where a buffered one would be sent once
    the server is back, after its caller was told it failed. ``reconnected`` is set by
    the connection's ``reconnected_cb``; the state is looked at again every 50 ms too."""
    publish = nc.publish

    async def held(*args: Any, **kwargs: Any) -> None:
        if not nc.is_connected and not nc.is_closed:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout
            while (nc.is_reconnecting or nc.is_connecting) and (
                    left := deadline - loop.time()) > 0:
                reconnected.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(reconnected.wait(), min(left, 0.05))
        await publish(*args, **kwargs)

    nc.publish = held  # type: ignore[method-assign]


async def require_tls(url: str, address: str) -> None:
    """Refuse, before any credentials are sent, a server whose greeting does not require
    TLS (nats-py would otherwise talk to it in the clear although ``tls://`` was asked
    for); :class:`BrokerUnavailable` when it does not or cannot be read."""
    parts = urlsplit(url)
    greeting = b""
    try:
        async with asyncio.timeout(5):
            reader, writer = await asyncio.open_connection(parts.hostname, parts.port or 4222)
            try:
                greeting = await reader.readuntil(b"\r\n")
            finally:
                writer.close()
    except (OSError, TimeoutError, asyncio.IncompleteReadError,
            asyncio.LimitOverrunError) as exc:
        raise BrokerUnavailable(f"nats at {address} is unreachable: {exc!r}") from None
    try:
        info = json.loads(greeting.removeprefix(b"INFO ")) if greeting.startswith(b"INFO ") \
            else {}
    except ValueError:
        info = {}
    if not (isinstance(info, dict) and info.get("tls_required") is True):
        raise BrokerUnavailable(
            f"nats at {address} does not offer TLS, and the address asks for it: nothing "
            "was sent; enable TLS on the server (a tls {} block), or use nats:// on a "
            "network you trust")


async def within(step: Awaitable[Any], timeout: float) -> bool:
    """Await ``step`` for up to ``timeout`` seconds, its exceptions ignored; ``False``
    when it is still running then (it is cancelled, and not awaited further)."""
    task = asyncio.ensure_future(step)
    done, _ = await asyncio.wait({task}, timeout=timeout)
    if not done:
        task.cancel()
        task.add_done_callback(lambda t: t.cancelled() or t.exception())
        return False
    if not task.cancelled():
        task.exception()
    return True
