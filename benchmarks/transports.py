"""Transport benchmark: one-way frames/s (100-byte frames) and ping-pong round trips.

    python benchmarks/transports.py [--json] [--uvloop] [--quick]

Measures memory (and ``memory-raw``: the same links used through their raw channels,
so the difference is what the ``LinkStream`` wrapper costs), Unix socket (in-process
and across two processes), TCP, WebSocket and, with the ``webrtc`` extra installed,
WebRTC; then the Mesh over memory and Unix sockets. With ``--json`` the last line
printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio

# This file is named like the package it measures: keep its own folder off the path.
SCRIPT = os.path.abspath(__file__)
_HERE = os.path.dirname(SCRIPT)
sys.path[:] = [entry for entry in sys.path if os.path.abspath(entry or ".") != _HERE]

from lazily_transports import (  # noqa: E402
    Frame,
    FrameStream,
    LinkConfig,
    LinkStream,
    Mesh,
    MissingDependencyError,
    PeerUp,
    dial,
    listen,
)

FRAME = b"x" * 100
SECRET = b"benchmark-cluster-secret-0123456"
END, DONE, PING = b"END", b"DONE", b"P"


def config(peer_id: int) -> LinkConfig:
    return LinkConfig(peer_id=peer_id, session_id="bench", secret=SECRET)


@asynccontextmanager
async def channel_pair(address: str) -> AsyncIterator[tuple[LinkStream, LinkStream]]:
    accepted: asyncio.Queue[LinkStream] = asyncio.Queue()
    release = asyncio.Event()

    async def handler(channel: LinkStream) -> None:
        accepted.put_nowait(channel)
        await release.wait()

    async with listen(address, config(2), handler) as listener:
        client = await dial(listener.address, config(1), timeout=30)
        server = await asyncio.wait_for(accepted.get(), 30)
        try:
            yield client, server
        finally:
            release.set()
            await client.aclose()


async def send_all(channel: FrameStream, count: int, tail: bytes | None = None) -> None:
    for _ in range(count):
        try:
            channel.send_nowait(FRAME)
        except anyio.WouldBlock:
            await channel.send(FRAME)
    if tail is not None:
        await channel.send(tail)


async def drain(channel: FrameStream, count: int) -> None:
    received = 0
    while received < count:
        try:
            channel.receive_nowait()
            received += 1
        except anyio.WouldBlock:
            await channel.wait_receive_ready()


async def one_way(client: FrameStream, server: FrameStream, count: int) -> float:
    start = time.perf_counter()
    sender = asyncio.create_task(send_all(client, count))
    await drain(server, count)
    await sender
    return count / (time.perf_counter() - start)


async def echo(channel: FrameStream, rounds: int) -> None:
    for _ in range(rounds):
        await channel.send(await channel.receive())


async def ping_pong(client: FrameStream, rounds: int) -> list[float]:
    samples = []
    for index in range(rounds):
        start = time.perf_counter()
        await client.send(PING + index.to_bytes(4, "big") + FRAME[5:])
        await client.receive()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def summary(rate: float, samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "frames_per_s": round(rate),
        "rtt_p50_ms": round(statistics.median(ordered), 4),
        "rtt_p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 4),
    }


async def measure_pair(
    address: str, count: int, rounds: int, *, raw: bool = False
) -> dict[str, float]:
    """One-way rate and ping-pong; with ``raw`` through the links' raw channels."""
    async with channel_pair(address) as (link_client, link_server):
        client: FrameStream = link_client.channel if raw else link_client
        server: FrameStream = link_server.channel if raw else link_server
        rate = await one_way(client, server, count)
        echoing = asyncio.create_task(echo(server, rounds))
        samples = await ping_pong(client, rounds)
        await echoing
    return summary(rate, samples)


async def measure_child(address: str, count: int, rounds: int, uvloop: bool) -> dict[str, float]:
    """Unix socket to a peer in a separate Python process."""
    accepted: asyncio.Queue[LinkStream] = asyncio.Queue()
    release = asyncio.Event()

    async def handler(channel: LinkStream) -> None:
        accepted.put_nowait(channel)
        await release.wait()

    async with listen(address, config(1), handler) as listener:
        args = [sys.executable, SCRIPT, "--child", listener.address]
        if uvloop:
            args.append("--uvloop")
        process = await asyncio.create_subprocess_exec(*args)
        try:
            channel = await asyncio.wait_for(accepted.get(), 30)
            start = time.perf_counter()
            await send_all(channel, count, tail=END)
            assert await channel.receive() == DONE
            rate = count / (time.perf_counter() - start)
            samples = await ping_pong(channel, rounds)
            await channel.send(END)
            await channel.receive()
        finally:
            release.set()
            await process.wait()
    return summary(rate, samples)


async def child(address: str) -> None:
    """The peer process: counts frames, echoes pings, answers END with DONE."""
    channel = await dial(address, config(2), timeout=30)
    pings = 0
    try:
        while True:
            frame = await channel.receive()
            if frame == END:
                await channel.send(DONE)
                if pings:
                    break
            elif frame[:1] == PING:
                pings += 1
                await channel.send(frame)
    finally:
        await channel.aclose()


async def measure_mesh(addresses: dict[int, str], count: int, rounds: int) -> dict[str, float]:
    """Mesh.send_nowait from node 1 to node 2, node 2 draining events in batches."""
    async with AsyncExitStack() as stack:
        meshes = {}
        for peer_id in (1, 2):
            others = {i: a for i, a in addresses.items() if i != peer_id}
            mesh = Mesh(config(peer_id), addresses[peer_id], others, backoff_initial=0.01)
            meshes[peer_id] = await stack.enter_async_context(mesh)
        for mesh in meshes.values():
            while not isinstance(await mesh.events.receive(), PeerUp):
                pass
        a, b = meshes[1], meshes[2]

        async def produce() -> None:
            for _ in range(count):
                try:
                    a.send_nowait(2, FRAME)
                except anyio.WouldBlock:
                    await a.send(2, FRAME)

        start = time.perf_counter()
        sender = asyncio.create_task(produce())
        received = 0
        while received < count:
            received += sum(type(e) is Frame for e in await b.events.receive_batch())
        await sender
        rate = count / (time.perf_counter() - start)

        async def reflect() -> None:
            for _ in range(rounds):
                event = await b.events.receive()
                assert isinstance(event, Frame)
                b.send_nowait(1, event.data)

        reflecting = asyncio.create_task(reflect())
        samples = []
        for _ in range(rounds):
            begin = time.perf_counter()
            a.send_nowait(2, FRAME)
            await a.events.receive()
            samples.append((time.perf_counter() - begin) * 1000)
        await reflecting
    return summary(rate, samples)


@asynccontextmanager
async def webrtc_room() -> AsyncIterator[str | None]:
    """A signaling room for WebRTC links, or None without the ``webrtc`` extra."""
    from lazily_transports import webrtc
    from lazily_transports.webrtc.signaling import SignalingServer

    try:
        webrtc.require_aiortc()
    except MissingDependencyError:
        yield None
        return
    async with SignalingServer() as server:
        yield f"webrtc://127.0.0.1:{server.port}/bench"


async def run(args: argparse.Namespace) -> dict[str, Any]:
    scale = 0.1 if args.quick else 1.0

    def n(value: int) -> int:
        return max(100, int(value * scale))

    tmp = tempfile.mkdtemp(prefix="lq-bench-", dir="/tmp")
    results: dict[str, Any] = {}
    skipped: dict[str, str] = {}
    plan: list[tuple[str, Callable[[], Awaitable[dict[str, float]]]]] = [
        ("memory", lambda: measure_pair("memory://bench", n(300_000), n(5000))),
        ("memory-raw", lambda: measure_pair("memory://raw", n(300_000), n(5000), raw=True)),
        ("unix", lambda: measure_pair(f"unix://{tmp}/in.sock", n(300_000), n(5000))),
        (
            "unix-2proc",
            lambda: measure_child(f"unix://{tmp}/x.sock", n(300_000), n(5000), args.uvloop),
        ),
        ("tcp", lambda: measure_pair("tcp://127.0.0.1:0", n(300_000), n(5000))),
        ("websocket", lambda: measure_pair("ws://127.0.0.1:0/bench", n(100_000), n(3000))),
        (
            "mesh-memory",
            lambda: measure_mesh({1: "memory://m1", 2: "memory://m2"}, n(300_000), n(5000)),
        ),
        (
            "mesh-unix",
            lambda: measure_mesh(
                {1: f"unix://{tmp}/m1.sock", 2: f"unix://{tmp}/m2.sock"}, n(300_000), n(5000)
            ),
        ),
    ]
    try:
        for name, measure in plan:
            results[name] = await measure()
            report(name, results[name])
        async with webrtc_room() as room:
            if room is None:
                skipped["webrtc"] = "the webrtc extra (aiortc) is not installed"
                print("webrtc      skipped: the webrtc extra (aiortc) is not installed")
            else:
                results["webrtc"] = await measure_pair(room, n(30_000), n(500))
                report("webrtc", results["webrtc"])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {
        "frame_bytes": len(FRAME),
        "loop": "uvloop" if args.uvloop else "asyncio",
        "python": sys.version.split()[0],
        "lazily_transports": results,
        "skipped": skipped,
    }


def report(name: str, figures: dict[str, float]) -> None:
    print(
        f"{name:<12}{figures['frames_per_s']:>10,.0f} frames/s   "
        f"rtt p50 {figures['rtt_p50_ms']:.3f} ms   p99 {figures['rtt_p99_ms']:.3f} ms",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    parser.add_argument("--uvloop", action="store_true", help="run on uvloop")
    parser.add_argument("--quick", action="store_true", help="a tenth of the iterations")
    parser.add_argument("--child", metavar="ADDRESS", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.uvloop:
        import uvloop

        uvloop.install()
    if args.child:
        asyncio.run(child(args.child))
        return
    figures = asyncio.run(run(args))
    if args.json:
        print(json.dumps(figures))


if __name__ == "__main__":
    main()
