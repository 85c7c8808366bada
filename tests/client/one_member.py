"""A one-member cluster on a short Unix socket path, serving client "web" (produce on
every name) with :data:`TOKEN`: the member tests of single client behaviours link to;
:func:`linked` is a raw link of client "web" to it, greeted, and :func:`answers` reads
its answers."""

from __future__ import annotations

import asyncio
import fcntl
import shutil
import struct
import tempfile
import termios
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import cbor2
from lazily_transports import LinkConfig, LinkStream, dial
from lazily_transports.sockets import SocketChannel
from lazily_transports.websocket import WebSocketChannel

from lazily_queue import ClientAccess, ClientGrant, Node
from lazily_queue.client import protocol as P
from lazily_queue.replicated import ops
from lazily_queue.replicated.client_sessions import new_session_id

TOKEN = b"token-of-the-web-tier"


@asynccontextmanager
async def one_member(access: ClientAccess | None = None, **options: Any,
                     ) -> AsyncIterator[Node]:
    """The member, started and led, serving ``access`` (client "web" by default);
    ``options`` go to :class:`Node`."""
    path = Path(tempfile.mkdtemp(prefix="lqm-", dir="/tmp"))
    if access is None:
        access = ClientAccess([ClientGrant("web", TOKEN, produce=["*"])])
    node = Node(1, data_dir=None, durability="none", listen=f"unix://{path}/n1.sock",
                secret=b"the-cluster-secret", clients=access, **options)
    try:
        async with node:
            await node.wait_for_leader()
            yield node
    finally:
        shutil.rmtree(path, ignore_errors=True)


async def linked(node: Node) -> LinkStream:
    """A link of client "web" to ``node``, its hello answered."""
    assert node.listen is not None
    stream = await dial(node.listen, LinkConfig(peer_id=0, session_id="x", secret=TOKEN,
                                                credential="web"))
    await stream.send(cbor2.dumps([1, P.HELLO, P.VERSION, new_session_id("web")]))
    assert cbor2.loads(await stream.receive())[1] == P.OK
    return stream


async def answers(stream: LinkStream, count: int) -> list[list[Any]]:
    """The next ``count`` answers on ``stream`` in the order they came, however the
    member batched them (the answers of one loop iteration leave as one frame)."""
    got: list[list[Any]] = []
    while len(got) < count:
        frame = cbor2.loads(await stream.receive())
        got.extend(frame[2] if frame[:2] == [0, P.BATCH] else [frame])
    assert len(got) == count, got
    return got


async def trickled_push_is_taken(node: Node, stream: LinkStream,
                                 write: Callable[[bytes], object],
                                 frame: Callable[[bytes], bytes], idle: float) -> None:
    """Push 200 kB to queue "jobs" (holding one element) as a frame (``frame`` of the
    request) written in 40 pieces, one every ``idle`` / 8 (five idle timeouts): it is
    answered and applied, and no link was closed as idle."""
    payload = cbor2.dumps([2, P.OP, 1, 1, ops.QUEUE_PUSH, ["jobs", b"x" * 200_000], 5000])
    wire = frame(payload)
    step = -(-len(wire) // 40)
    for start in range(0, len(wire), step):
        write(wire[start:start + step])
        await asyncio.sleep(idle / 8)
    answer = cbor2.loads(await stream.receive())
    assert answer[:2] == [2, P.OK], answer
    assert node.queue("jobs").len() == 2
    assert node.clients is not None and node.clients.stats()["idle_closed"] == 0


async def trickled_frame_is_cut(node: Node, transport: asyncio.WriteTransport,
                                start: bytes, idle: float) -> None:
    """Write ``start`` (most of a frame), then one byte every ``idle`` / 8 (slower than
    the member's minimum rate): the member closes the link as idle within ten idle
    timeouts."""
    transport.write(start)

    async def trickle() -> None:
        while not transport.is_closing():
            await asyncio.sleep(idle / 8)
            transport.write(b"\0")

    task = asyncio.create_task(trickle())
    assert node.clients is not None
    try:
        async with asyncio.timeout(10 * idle):
            while node.clients.stats()["connections"]:  # noqa: ASYNC110 - plain state
                await asyncio.sleep(0.05)
    finally:
        task.cancel()
    assert node.clients.stats()["idle_closed"] == 1


def unread_while_waiting(node: Node) -> int:
    """Bytes the kernel holds, not yet read by the member, for the one client link whose
    frame waits for room in the frame budget."""
    assert node.clients is not None
    waiting = [conn.outbox.stream.channel for conn in node.clients._conns
               if conn.outbox.stream.channel.budget_waiting_since is not None]
    assert len(waiting) == 1, f"{len(waiting)} links wait for room in the frame budget"
    channel = waiting[0]
    if isinstance(channel, WebSocketChannel):
        transport: Any = channel._ws.transport
    else:
        assert isinstance(channel, SocketChannel)
        transport = channel._transport
    count = fcntl.ioctl(transport.get_extra_info("socket").fileno(), termios.FIONREAD,
                        b"\0" * 4)
    return int(struct.unpack("i", count)[0])


def web_client_config(config: Path, top: str, client: str = "") -> Any:
    """The configuration ``config`` of a member serving client "web" (token from
    ``$LQ_WEB``), ``top`` among its top-level keys and ``client`` in the client's table,
    written and loaded."""
    from lazily_queue.config import load_config

    config.write_text(f'id = 1\ndata_dir = "data"\nlisten = "unix:///tmp/lq-{config.stem}.sock"'
                      f'\nsecret_env = "LQ_SECRET"\n{top}\n[peers]\n[[client]]\nname = "web"'
                      f'\ntoken_env = "LQ_WEB"\n{client}\n')
    return load_config(config)


def client_stats(node: Node) -> dict[str, Any]:
    """``node``'s client server figures (it must serve clients)."""
    assert node.clients is not None
    return node.clients.stats()


async def until(predicate: Callable[[], object], seconds: float = 10.0) -> None:
    """Wait until ``predicate()`` is true; ``TimeoutError`` after ``seconds``."""
    async with asyncio.timeout(seconds):
        while not predicate():  # noqa: ASYNC110 - polls plain state
            await asyncio.sleep(0.02)
