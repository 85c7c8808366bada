"""The addresses of socket links: ``unix:///path`` and ``unix:relpath`` (a filesystem
path), ``tcp://host:port`` and ``tls://host:port``, parsed for dialing or listening, and
a bound socket's name written back as an address; the SSL context an address needs (or
refuses); a Unix socket's file checked and reclaimed."""

from __future__ import annotations

import errno
import os
import socket
import ssl
import stat
import struct
from typing import Any
from urllib.parse import urlsplit

from ._core._tls import refuse_tls
from .errors import AddressError

__all__ = ["UNIX_PATH_MAX", "check_tls", "format_tcp", "parse_tcp", "parse_unix",
           "reclaim_unix_path", "socket_inode", "unix_peer_source"]

#: The longest Unix socket path, in bytes (``sun_path`` less its terminating NUL).
UNIX_PATH_MAX = 107


def unix_peer_source(sock: socket.socket, remote_address: str) -> str:
    """The admission source of a connection accepted on a Unix socket: the user id of
    the process that connected, where the system says it (``SO_PEERCRED``), so that
    another user's processes holding handshakes open do not use up this user's slots;
    else ``remote_address`` (the listener is one source)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return remote_address
    try:
        credentials = sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    except OSError:
        return remote_address
    _pid, uid, _gid = struct.unpack("3i", credentials)
    return f"{remote_address} (uid {uid})"


def parse_unix(address: str) -> str:
    """The filesystem path of ``unix:///abs/path`` or ``unix:relative/path``."""
    if address.startswith("unix://"):
        path = address[len("unix://") :]
        if not path.startswith("/"):
            raise AddressError(
                f"{address!r}: use unix:///absolute/path or unix:relative/path (no host part)"
            )
    elif address.startswith("unix:"):
        path = address[len("unix:") :]
    else:
        raise AddressError(f"expected a unix: address, got {address!r}")
    if not path:
        raise AddressError(f"{address!r} has an empty socket path")
    if path.endswith("/"):
        raise AddressError(f"{address!r} ends with '/': it names a directory, not a socket")
    if len(os.fsencode(path)) > UNIX_PATH_MAX:
        raise AddressError(
            f"unix socket path is {len(os.fsencode(path))} bytes; the limit is {UNIX_PATH_MAX}"
        )
    return path


def parse_tcp(address: str, *, listening: bool) -> tuple[str, int]:
    """Host and port of ``tcp://host:port`` or ``tls://host:port`` (port 0 only when
    listening)."""
    parts = urlsplit(address)
    scheme = parts.scheme if parts.scheme in ("tcp", "tls") else "tcp"
    if parts.scheme != scheme or parts.path not in ("", "/") or parts.query or parts.fragment:
        raise AddressError(f"expected {scheme}://HOST:PORT, got {address!r}")
    try:
        port = parts.port
    except ValueError as exc:
        raise AddressError(f"{address!r}: {exc}") from None
    host = parts.hostname
    if not host or port is None:
        raise AddressError(f"expected {scheme}://HOST:PORT, got {address!r}")
    if port == 0 and not listening:
        raise AddressError(f"{address!r}: cannot dial port 0")
    return host, port


def check_tls(address: str, ssl_context: ssl.SSLContext | None, *, listening: bool) -> bool:
    """Whether ``address`` is ``tls:``; its context is required, others refuse one."""
    if not address.startswith("tls:"):
        refuse_tls(ssl_context, "unix: and tcp:")
        return False
    if ssl_context is None:
        side = "a server" if listening else "a client"
        raise ValueError(f"{address}: tls:// links need {side} ssl_context (certificate, key "
                         "and CA: see lazily_transports.tls.TLSFiles)")
    return True


def format_tcp(sockname: Any, scheme: str = "tcp") -> str:
    """``tcp://host:port`` (or ``scheme``) of a socket name, IPv6 hosts in brackets."""
    host, port = sockname[0], sockname[1]
    if ":" in host:
        return f"{scheme}://[{host}]:{port}"
    return f"{scheme}://{host}:{port}"


def socket_inode(path: str) -> tuple[int, int] | None:
    """The device and inode of the file at ``path`` (``None``: there is none)."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino)


def reclaim_unix_path(path: str) -> None:
    """Remove a stale socket file; refuse when a live listener owns it."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise OSError(errno.EADDRINUSE, f"{path} exists and is not a socket")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
    except OSError:
        os.unlink(path)
        return
    finally:
        probe.close()
    raise OSError(errno.EADDRINUSE, f"a listener is already bound to {path}")
