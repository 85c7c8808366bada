"""A fault proxy between real node processes: Unix sockets, whole frames, drops and cuts.

Node ``a`` reaches peer ``b`` at ``<dir>/p<a>-<b>.sock``; the proxy forwards each
connection to ``b``'s own socket. It reads the transport's length-prefixed frames in
both directions, so it can drop whole frames of one direction (after the first few,
which carry the handshake) or cut a pair of members apart (their connections are
closed and new ones refused until healed).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import random
import struct
from pathlib import Path

HANDSHAKE_FRAMES = 4
_LENGTH = struct.Struct(">I")


class FaultProxy:
    """Forwards every member-to-member connection; faults are set per pair."""

    def __init__(self, directory: Path, members: list[int], seed: int = 0) -> None:
        self.dir = directory
        self.members = members
        self.rng = random.Random(seed)
        self.drop: dict[tuple[int, int], float] = {}
        self._cut: set[frozenset[int]] = set()
        self._servers: list[asyncio.base_events.Server] = []
        self._conns: dict[frozenset[int], set[asyncio.StreamWriter]] = {}
        self.forwarded = 0
        self.dropped = 0

    def address(self, src: int, dst: int) -> str:
        return f"unix://{self.dir}/p{src}-{dst}.sock"

    def target(self, dst: int) -> Path:
        return self.dir / f"n{dst}.sock"

    async def start(self) -> None:
        for a in self.members:
            for b in self.members:
                if a != b:
                    path = str(self.dir / f"p{a}-{b}.sock")
                    server = await asyncio.start_unix_server(
                        functools.partial(self._accept, a, b), path=path)
                    self._servers.append(server)

    async def stop(self) -> None:
        for server in self._servers:
            server.close()
        for writers in self._conns.values():
            for w in writers:
                w.close()

    # -- faults ---------------------------------------------------------------------------

    def cut(self, a: int, b: int) -> None:
        """Close the connections between ``a`` and ``b`` and refuse new ones."""
        key = frozenset((a, b))
        self._cut.add(key)
        for w in self._conns.pop(key, set()):
            w.close()

    def isolate(self, node: int) -> None:
        for other in self.members:
            if other != node:
                self.cut(node, other)

    def heal(self) -> None:
        self._cut.clear()
        self.drop.clear()

    # -- forwarding -----------------------------------------------------------------------

    async def _accept(self, a: int, b: int, reader: asyncio.StreamReader,
                      writer: asyncio.StreamWriter) -> None:
        key = frozenset((a, b))
        if key in self._cut:
            writer.close()
            return
        try:
            up_reader, up_writer = await asyncio.open_unix_connection(str(self.target(b)))
        except OSError:
            writer.close()
            return
        conns = self._conns.setdefault(key, set())
        conns.update((writer, up_writer))
        pumps = [asyncio.ensure_future(self._pump(reader, up_writer, a, b)),
                 asyncio.ensure_future(self._pump(up_reader, writer, b, a))]
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for pump in pumps:
                pump.cancel()
            for w in (writer, up_writer):
                w.close()
                conns.discard(w)

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    src: int, dst: int) -> None:
        frames = 0
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError, OSError):
            while True:
                header = await reader.readexactly(4)
                payload = await reader.readexactly(_LENGTH.unpack(header)[0])
                frames += 1
                p = self.drop.get((src, dst), 0.0)
                if frames > HANDSHAKE_FRAMES and p and self.rng.random() < p:
                    self.dropped += 1
                    continue
                writer.write(header + payload)
                await writer.drain()
                self.forwarded += 1
