"""TCP relays a test owns, to cut links between processes and heal them (a network
partition among real processes on one machine)."""

from __future__ import annotations

import asyncio
import contextlib


class Relay:
    """Accepts on a free port of 127.0.0.1 and forwards each connection to ``port``.

    Cut, it forwards nothing and closes nothing (a silent partition: what arrives is
    read and dropped, new connections are accepted and go nowhere), as a dropped route
    does; healed, it closes the connections the cut spoiled (their streams lost bytes)
    and forwards new ones.
    """

    def __init__(self, port: int) -> None:
        self.target = port
        self.port = 0
        self.cut = False
        self._server: asyncio.Server | None = None
        self._spoiled: set[asyncio.StreamWriter] = set()
        self._open: set[asyncio.StreamWriter] = set()

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    @property
    def address(self) -> str:
        return f"tcp://127.0.0.1:{self.port}"

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._open.add(writer)
        try:
            if self.cut:
                self._spoiled.add(writer)
                await _drain(reader)
                return
            try:
                up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target)
            except OSError:
                return
            self._open.add(up_writer)
            try:
                await asyncio.gather(self._pump(reader, up_writer, writer),
                                     self._pump(up_reader, writer, up_writer))
            finally:
                self._open.discard(up_writer)
                up_writer.close()
        finally:
            self._open.discard(writer)
            self._spoiled.discard(writer)
            writer.close()

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    source: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            while data := await reader.read(65536):
                if self.cut:
                    self._spoiled.update((writer, source))
                    continue
                if writer in self._spoiled:
                    break
                writer.write(data)
                await writer.drain()
        writer.close()

    def sever(self) -> None:
        self.cut = True

    def heal(self) -> None:
        self.cut = False
        for writer in list(self._spoiled):
            writer.close()
        self._spoiled.clear()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for writer in list(self._open):
            writer.close()
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 5)


async def _drain(reader: asyncio.StreamReader) -> None:
    with contextlib.suppress(OSError):
        while await reader.read(65536):
            pass
