"""A one-route HTTP page answering every request with a canned body, for the tests of
what a member reads from another's status page."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

#: Headers to answer with, given the request's (names in lower case).
Answer = Callable[[dict[str, str]], dict[str, str]]


@asynccontextmanager
async def http_page(body: Callable[[], bytes],
                    headers_for: Answer | None = None) -> AsyncIterator[str]:
    """A page answering every request with 200, ``body()`` as JSON and
    ``headers_for(request headers)``; yields its URL."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")[1:]
        asked = {n.strip().lower(): v.strip() for n, _, v in (h.partition(":") for h in head)}
        extra = "".join(f"{n}: {v}\r\n" for n, v in (headers_for or dict)(asked).items())
        writer.write(f"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n{extra}\r\n"
                     .encode() + body())
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()
