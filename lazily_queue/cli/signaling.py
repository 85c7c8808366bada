"""``lazily-queue signaling --listen HOST:PORT``: the signaling server of WebRTC links.

Members behind NATs (laptops, edge devices) reach each other over WebRTC; they find
each other through this server, which only relays their connection offers. It needs
its own token (``--token-env`` / ``--token-file``; members send it from their
``[webrtc] signaling_token_env``): only holders of the token can join its rooms.
The cluster secret still authenticates every member over the links themselves.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import signal
import sys
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "signaling", help="run the signaling server of webrtc+ws:// links",
        description=(__doc__ or "").replace("``", ""))
    parser.add_argument("--listen", required=True, metavar="HOST:PORT",
                        help="address to serve on (port 0: any free port; printed)")
    token = parser.add_mutually_exclusive_group()
    token.add_argument("--token-env", metavar="NAME",
                       help="environment variable holding the token members must send")
    token.add_argument("--token-file", metavar="FILE", type=Path, help="file holding it")
    token.add_argument("--no-token", action="store_true",
                       help="accept anyone (a closed network only)")
    parser.add_argument("--tls-cert", type=Path, metavar="FILE",
                        help="serve wss:// with this certificate (PEM)")
    parser.add_argument("--tls-key", type=Path, metavar="FILE", help="... and this key")
    parser.set_defaults(handler=run)


def _token(args: argparse.Namespace) -> str | None:
    from ..config_transport import read_secret

    if args.no_token:
        return None
    if args.token_env is None and args.token_file is None:
        raise ValueError("give --token-env NAME or --token-file FILE (the token members "
                         "send), or --no-token on a closed network")
    token = read_secret(args.token_env, args.token_file, "the signaling token", ValueError)
    assert token is not None
    return token


def listen_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (an IPv6 host in brackets) as ``(host, port)``."""
    host, sep, port = text.rpartition(":")
    bracketed = host.startswith("[") and host.endswith("]") and len(host) > 2
    if (not sep or not port.isdigit() or not 0 <= int(port) < 65536 or not host
            or (("[" in host or "]" in host) and not bracketed)):
        raise ValueError(f"--listen must be HOST:PORT (an IPv6 host as [::1]), not {text!r}")
    return (host[1:-1] if bracketed else host), int(port)


def run(args: argparse.Namespace) -> int:
    try:
        host, port = listen_address(args.listen)
        token = _token(args)
        context = None
        if (args.tls_cert is None) != (args.tls_key is None):
            raise ValueError("give both --tls-cert and --tls-key (or neither)")
        if args.tls_cert is not None:
            from lazily_transports import TLSFiles

            context = TLSFiles(args.tls_cert, args.tls_key).server_context()
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from ..logs import configure

    configure("info")
    try:
        return asyncio.run(_serve(host, port, token, context))
    except OSError as exc:
        fix = ("; another process listens there: stop it or choose another port"
               if exc.errno == errno.EADDRINUSE else "")
        print(f"error: cannot serve on {args.listen}: {exc.strerror or exc}{fix}",
              file=sys.stderr)
        return 1


async def _serve(host: str, port: int, token: str | None, context: Any) -> int:
    from lazily_transports.webrtc.signaling import SignalingServer

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    async with SignalingServer(host, port, token=token, ssl_context=context) as server:
        print(f"signaling on {server.url} ({'token required' if token else 'no token'})",
              flush=True)
        await stop.wait()
    return 0
