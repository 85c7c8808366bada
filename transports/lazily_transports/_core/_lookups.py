"""Host name lookups before a dial, one in flight per name, and connecting to what one
found.

asyncio resolves a host name on a thread of its loop's default executor, and a lookup
that hangs (a DNS server that does not answer) keeps its thread after the dial waiting
for it timed out. A peer dialled again and again would then take every thread of that
executor, which the rest of the process shares. :func:`lookup` lets one lookup of a name
run at a time on a loop: later dials of the name wait for that one. What it found is
connected to by :func:`connected_socket`, so that a dial looks its host up once.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Sequence
from typing import Any

from ..abc import AddressInfo
from ..errors import AddressError
from ..socket_addresses import parse_tcp
from ..websocket_addresses import parse_websocket

_Key = tuple[asyncio.AbstractEventLoop, str, int]
_pending: dict[_Key, asyncio.Future[Sequence[AddressInfo]]] = {}


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


async def lookup(host: str, port: int) -> Sequence[AddressInfo]:
    """The addresses ``host`` resolves to (with ``port``), joining a lookup of it already
    under way on this loop (it goes on when the caller stops waiting); raises
    ``socket.gaierror`` when it does not resolve."""
    loop = asyncio.get_running_loop()
    key = (loop, host, port)
    pending = _pending.get(key)
    if pending is None:
        pending = loop.create_task(_resolve(loop, host, port))
        _pending[key] = pending
        pending.add_done_callback(lambda done: _finished(key, done))
    return await asyncio.shield(pending)


async def _resolve(loop: asyncio.AbstractEventLoop, host: str, port: int
                   ) -> Sequence[AddressInfo]:
    return await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)


async def connected_socket(found: Sequence[AddressInfo]) -> socket.socket:
    """A socket connected to the first of ``found`` that accepts, tried in order; raises
    the ``OSError`` of the last one tried when none does (naming all when they differ)."""
    loop = asyncio.get_running_loop()
    failures: list[OSError] = []
    for family, kind, proto, _, sockaddr in found:
        sock = socket.socket(family, kind, proto)
        try:
            sock.setblocking(False)
            await loop.sock_connect(sock, sockaddr)
        except OSError as exc:
            sock.close()
            failures.append(exc)
            continue
        except BaseException:
            sock.close()
            raise
        return sock
    if not failures:
        raise OSError(f"no address to connect to (looked up: {list(found)})")
    if len({str(exc) for exc in failures}) == 1:
        raise failures[-1]
    [code, *others] = {exc.errno for exc in failures}
    if code is None or others:
        raise OSError("; ".join(str(exc) for exc in failures))
    raise OSError(code, "; ".join(exc.strerror or str(exc) for exc in failures))


def _finished(key: _Key, done: asyncio.Future[Any]) -> None:
    _pending.pop(key, None)
    if not done.cancelled():
        done.exception()  # retrieved: a lookup nobody waits for any more is not reported
