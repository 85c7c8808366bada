"""Helpers shared by the transports tests: configs, addresses and channel pairs."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from lazily_transports import LinkConfig, LinkStream, dial, listen

SECRET = b"transports-test-cluster-secret!!"
_names = itertools.count()


def make_config(peer_id: int, **overrides: Any) -> LinkConfig:
    values: dict[str, Any] = {
        "peer_id": peer_id,
        "session_id": "test-cluster",
        "secret": SECRET,
        "handshake_timeout": 2.0,
    }
    values.update(overrides)
    return LinkConfig(**values)


def unique_memory_address() -> str:
    return f"memory://test-{next(_names)}"


def address_for(kind: str, tmp: Path) -> str:
    return {
        "memory": unique_memory_address(),
        "unix": f"unix://{tmp}/link.sock",
        "tcp": "tcp://127.0.0.1:0",
        "ws": "ws://127.0.0.1:0/link",
    }[kind]


@asynccontextmanager
async def channel_pair(
    address: str,
    dialer: LinkConfig | None = None,
    acceptor: LinkConfig | None = None,
    **listen_kwargs: Any,
) -> AsyncIterator[tuple[LinkStream, LinkStream]]:
    """Listen on ``address``, dial it, and yield (dialer side, acceptor side)."""
    dialer = dialer or make_config(1)
    acceptor = acceptor or make_config(2)
    accepted: asyncio.Queue[LinkStream] = asyncio.Queue()
    release = asyncio.Event()
    client_ssl = listen_kwargs.pop("client_ssl", None)

    async def handler(channel: LinkStream) -> None:
        await accepted.put(channel)
        await release.wait()

    async with listen(address, acceptor, handler, **listen_kwargs) as listener:
        client = await dial(listener.address, dialer, timeout=5, ssl_context=client_ssl)
        server = await asyncio.wait_for(accepted.get(), 5)
        try:
            yield client, server
        finally:
            release.set()
            await client.aclose()


async def eventually(predicate: Callable[[], object], timeout: float = 10.0) -> None:
    """Wait until ``predicate()`` is true (polled: it reads state nothing signals)."""
    async with asyncio.timeout(timeout):
        while not predicate():  # noqa: ASYNC110 - polls plain state
            await asyncio.sleep(0.01)
