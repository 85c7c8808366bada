"""Run a signaling server: ``python -m lazily_transports.webrtc.signaling [options]``.

Options: ``--host H`` (default 127.0.0.1), ``--port P`` (default 8765, 0 for any free
port) and ``--allow A:B``.

Every URL path is a room. ``--allow 1:2`` (repeatable) switches every room to
allowlist mode and lets peers 1 and 2 signal each other.
"""

from __future__ import annotations

import argparse
import asyncio
import logging

from ._room import Permissions
from ._server import SignalingServer


def _pair(text: str) -> tuple[int, int]:
    left, sep, right = text.partition(":")
    if not sep or not left.isdigit() or not right.isdigit():
        raise argparse.ArgumentTypeError(f"expected PEER:PEER, got {text!r}")
    return int(left), int(right)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m lazily_transports.webrtc.signaling", description=__doc__
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8765, help="port to bind (0: any free port)")
    parser.add_argument("--allow", type=_pair, action="append", default=[], metavar="A:B")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    pairs: dict[int, list[int]] = {}
    for left, right in args.allow:
        pairs.setdefault(left, []).append(right)
    permissions = Permissions.allowlist(pairs) if pairs else Permissions()
    asyncio.run(_serve(args.host, args.port, permissions))


async def _serve(host: str, port: int, permissions: Permissions) -> None:
    async with SignalingServer(host, port, permissions=permissions) as server:
        print(f"signaling on {server.url} ({permissions.mode})", flush=True)
        await asyncio.Event().wait()


if __name__ == "__main__":
    main()
