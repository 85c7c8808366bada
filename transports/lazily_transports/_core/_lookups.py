"""Host name lookups before a dial: one in flight per name.

asyncio resolves a host name on a thread of its loop's default executor, and a lookup
that hangs (a DNS server that does not answer) keeps its thread after the dial waiting
for it timed out. A peer dialled again and again would then take every thread of that
executor, which the rest of the process shares. :func:`lookup` lets one lookup of a name
run at a time on a loop: later dials of the name wait for that one.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from typing import Any

from ..errors import AddressError
from ..socket_addresses import parse_tcp
from ..websocket_addresses import parse_websocket

_Key = tuple[asyncio.AbstractEventLoop, str, int]
_pending: dict[_Key, asyncio.Future[Any]] = {}


def host_of(address: str) -> tuple[str, int] | None:
    """The host name and port a dial of ``address`` looks up (``None``: an IP address, a
    Unix socket, a scheme that names no host, or an address that does not parse: its
    transport says what is wrong)."""
    scheme = address.split(":", 1)[0]
    try:
        if scheme in ("tcp", "tls"):
            host, port = parse_tcp(address, listening=False)
        elif scheme in ("ws", "wss"):
            _, host, port, _ = parse_websocket(address, listening=False)
        else:
            return None
    except (AddressError, ValueError):
        return None
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return (host, port) if host else None
    return None


async def lookup(host: str, port: int) -> None:
    """Resolve ``host``, joining a lookup of it already under way on this loop (it goes on
    when the caller stops waiting); raises ``socket.gaierror`` when it does not resolve."""
    loop = asyncio.get_running_loop()
    key = (loop, host, port)
    pending = _pending.get(key)
    if pending is None:
        pending = loop.create_task(loop.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        _pending[key] = pending
        pending.add_done_callback(lambda done: _finished(key, done))
    await asyncio.shield(pending)


def _finished(key: _Key, done: asyncio.Future[Any]) -> None:
    _pending.pop(key, None)
    if not done.cancelled():
        done.exception()  # retrieved: a lookup nobody waits for any more is not reported
