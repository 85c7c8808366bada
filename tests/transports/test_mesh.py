"""Mesh: who dials whom, refusals, events in order, drops, backpressure and reconnects."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import anyio
import pytest
from lazily_transports import (
    Frame,
    FrameTooLargeError,
    HandshakeError,
    Mesh,
    MeshEvent,
    PeerDown,
    PeerRejectedError,
    PeerUp,
    SchemeTable,
    Transport,
    UnknownPeerError,
    dial,
)
from transport_helpers import address_for, eventually, make_config, unique_memory_address

pytestmark = pytest.mark.timeout(30)

FAST = {"backoff_initial": 0.01, "backoff_max": 0.1, "connect_timeout": 2.0}


async def until(mesh: Mesh, predicate: type | object, timeout: float = 5.0) -> list[MeshEvent]:
    """Collect events until one matches ``predicate`` (a type or an event); return them all."""
    seen: list[MeshEvent] = []
    with anyio.fail_after(timeout):
        while True:
            event = await mesh.events.receive()
            seen.append(event)
            if (isinstance(predicate, type) and isinstance(event, predicate)) or event == predicate:
                return seen


def assert_epoch_order(events: list[MeshEvent]) -> None:
    """Per peer: frames only inside their epoch's up/down window, epochs increasing."""
    current: dict[int, int | None] = {}
    last: dict[int, int] = {}
    for event in events:
        peer = event.peer_id
        if isinstance(event, PeerUp):
            assert current.get(peer) is None, f"{event} while epoch {current[peer]} is up"
            assert event.epoch > last.get(peer, 0), f"epoch went backwards: {event}"
            current[peer] = last[peer] = event.epoch
        elif isinstance(event, PeerDown):
            assert current.get(peer) == event.epoch, f"{event} without matching PeerUp"
            current[peer] = None
        else:
            assert current.get(peer) == event.epoch, f"frame of epoch {event.epoch} outside it"


def node(peer_id: int, addresses: dict[int, str], **kwargs: object) -> Mesh:
    peers = {other: address for other, address in addresses.items() if other != peer_id}
    options = {**FAST, **kwargs}
    return Mesh(make_config(peer_id), addresses[peer_id], peers, **options)  # type: ignore[arg-type]


async def test_two_nodes_exchange_frames_over_every_transport(
    address: str, short_tmp: Path
) -> None:
    kind = address.split(":", 1)[0]
    second = address_for(kind, short_tmp / "b") if kind != "unix" else f"unix://{short_tmp}/b.sock"
    if kind in ("tcp", "ws"):
        # The dialer needs the acceptor's real port, so bind the acceptor first.
        async with Mesh(make_config(2), address, {1: "memory://unused"}, **FAST) as b:
            assert b.listen_address is not None
            async with Mesh(make_config(1), None, {2: b.listen_address}, **FAST) as a:
                await exchange(a, b)
        return
    async with node(1, {1: second, 2: address}) as a, node(2, {1: second, 2: address}) as b:
        await exchange(a, b)


async def exchange(a: Mesh, b: Mesh) -> None:
    up_a = await until(a, PeerUp)
    up_b = await until(b, PeerUp)
    assert up_a[-1].peer_id == 2 and up_b[-1].peer_id == 1
    for i in range(100):
        assert a.send_nowait(2, b"a%d" % i)
        assert await b.send(1, b"b%d" % i)
    got_b = [e for e in await until(b, Frame(1, up_b[-1].epoch, b"a99")) if isinstance(e, Frame)]
    got_a = [e for e in await until(a, Frame(2, up_a[-1].epoch, b"b99")) if isinstance(e, Frame)]
    assert [e.data for e in got_b] == [b"a%d" % i for i in range(100)]
    assert [e.data for e in got_a] == [b"b%d" % i for i in range(100)]
    assert a.counters(2).frames_sent == 100 and b.counters(1).frames_received == 100


async def test_three_nodes_form_a_full_mesh() -> None:
    addresses = {i: unique_memory_address() for i in (1, 2, 3)}
    async with node(1, addresses) as a, node(2, addresses) as b, node(3, addresses) as c:
        for mesh, others in ((a, {2, 3}), (b, {1, 3}), (c, {1, 2})):
            ups = set()
            while ups != others:
                ups |= {e.peer_id for e in await until(mesh, PeerUp) if isinstance(e, PeerUp)}
        sent = a.broadcast_nowait(b"hello all")
        assert sent == {2: True, 3: True}
        assert (await until(b, Frame))[-1] == Frame(1, b.epoch(1), b"hello all")
        assert (await until(c, Frame))[-1] == Frame(1, c.epoch(1), b"hello all")


async def test_only_the_lower_id_dials() -> None:
    low, high = unique_memory_address(), unique_memory_address()
    # Node 1 does not listen at all: node 2 never dials it, node 1 dials node 2.
    async with Mesh(make_config(2), high, {1: low}, **FAST) as b:
        async with Mesh(make_config(1), None, {2: high}, **FAST) as a:
            assert (await until(a, PeerUp))[-1].peer_id == 2
            assert b.is_up(1)
    # Node 2 does not listen: node 1 keeps failing to dial, node 2 never tries.
    async with Mesh(make_config(1), low, {2: high}, **FAST) as a:
        async with Mesh(make_config(2), None, {1: low}, **FAST) as b:
            with anyio.fail_after(5):
                while a.counters(2).connect_failures < 3:  # noqa: ASYNC110 - polls a counter
                    await asyncio.sleep(0.01)
            assert not a.is_up(2) and not b.is_up(1)
            assert a.counters(2).connect_failures > 0
            assert b.counters(1).connect_failures == 0


async def test_links_from_strangers_and_wrong_direction_are_refused(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="lazily_transports")
    address = unique_memory_address()
    async with Mesh(make_config(5), address, {3: unique_memory_address(), 8: "memory://x"}) as m:
        with pytest.raises(PeerRejectedError, match="not a member") as info:
            await dial(address, make_config(9))
        assert info.value.field == "peer_id"
        with pytest.raises(PeerRejectedError, match="must accept"):
            await dial(address, make_config(8))
        with pytest.raises(HandshakeError, match="own id"):
            await dial(address, make_config(5))
        assert not m.is_up(8)
    messages = " ".join(r.getMessage() for r in caplog.records)
    assert "peer 9 is not a member" in messages and "peer 8 must accept" in messages


async def test_duplicate_node_id_is_detected_and_refused(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="lazily_transports")
    first, second = unique_memory_address(), unique_memory_address()
    # Both nodes are configured as id 1; each believes the other is node 2.
    async with Mesh(make_config(1), first, {2: second}, **FAST) as a:
        async with Mesh(make_config(1), second, {2: first}, **FAST) as b:
            with anyio.fail_after(5):  # both sides tried, and each refusal was logged
                while sum("two nodes share one id" in r.getMessage()  # noqa: ASYNC110
                          for r in caplog.records) < 2:
                    await asyncio.sleep(0.01)
            assert not a.is_up(2) and not b.is_up(2)
            assert len(a.events) == 0


async def test_sending_while_down_drops_and_counts() -> None:
    mesh = Mesh(make_config(1), None, {2: unique_memory_address()}, **FAST)
    async with mesh:
        assert not mesh.send_ready(2) and not mesh.send_ready(7)
        assert mesh.send_nowait(2, b"lost") is False
        assert await mesh.send(2, b"lost too") is False
        assert mesh.counters(2).frames_dropped == 2
        with pytest.raises(UnknownPeerError, match="unknown peer id 7"):
            mesh.send_nowait(7, b"x")
        with pytest.raises(FrameTooLargeError):
            mesh.send_nowait(2, b"x" * (mesh.config.max_frame_size + 1))


async def test_full_buffer_raises_would_block_and_send_waits() -> None:
    addresses = {1: unique_memory_address(), 2: unique_memory_address()}
    small = {"send_buffer_size": 4096, "receive_buffer_size": 4096}
    a = Mesh(make_config(1, **small), addresses[1], {2: addresses[2]}, **FAST)
    b = Mesh(make_config(2, **small), addresses[2], {1: addresses[1]}, event_capacity=8, **FAST)
    async with a, b:
        await until(a, PeerUp)
        await until(b, PeerUp)
        assert a.send_ready(2)
        sent = 0
        with anyio.fail_after(5):
            while True:
                try:
                    a.send_nowait(2, sent.to_bytes(4, "big") * 256)
                except anyio.WouldBlock:
                    assert not a.send_ready(2)
                    break
                sent += 1
                await asyncio.sleep(0)
        blocked = asyncio.create_task(a.send(2, sent.to_bytes(4, "big") * 256))
        for _ in range(100):  # nothing reads on b's side: no turn of the loop frees room
            await asyncio.sleep(0)
        assert not blocked.done()
        frames = []
        while len(frames) < sent + 1:
            frames += [e for e in await b.events.receive_batch() if isinstance(e, Frame)]
        assert await blocked is True
        assert [int.from_bytes(f.data[:4], "big") for f in frames] == list(range(sent + 1))
        assert a.counters(2).frames_dropped == 0


async def test_reconnect_after_restart_uses_a_new_epoch(short_tmp: Path) -> None:
    addresses = {1: f"unix://{short_tmp}/a.sock", 2: f"unix://{short_tmp}/b.sock"}
    async with node(1, addresses) as a:
        async with node(2, addresses) as b:
            events = await until(a, PeerUp)
            await until(b, PeerUp)
            first = a.epoch(2)
            assert b.send_nowait(1, b"before")
            events += await until(a, Frame)
        events += await until(a, PeerDown)
        assert events[-1].epoch == first
        assert a.send_nowait(2, b"into the void") is False
        dropped = a.counters(2).frames_dropped
        assert dropped >= 1
        async with node(2, addresses) as b2:
            events += await until(a, PeerUp)
            await until(b2, PeerUp)
            assert a.epoch(2) > first
            assert b2.send_nowait(1, b"after")
            events += await until(a, Frame)
            assert events[-1] == Frame(2, a.epoch(2), b"after")
            assert a.counters(2).reconnects == 1
    assert_epoch_order(events)


async def test_newer_connection_replaces_older_one_without_mixing_epochs(short_tmp: Path) -> None:
    addresses = {1: f"unix://{short_tmp}/a.sock", 2: f"unix://{short_tmp}/b.sock"}
    slow = {"backoff_initial": 0.5, "backoff_max": 0.5}
    async with node(1, addresses, **slow) as a, node(2, addresses) as b:
        events = await until(b, PeerUp)
        await until(a, PeerUp)
        for i in range(200):
            assert a.send_nowait(2, b"old-%d" % i)
        intruder = await dial(addresses[2], make_config(1))  # same secret, same id
        events += await until(b, PeerDown)
        assert events[-1].reason == "replaced by a newer connection"
        newer = b.epoch(1)
        await intruder.send(b"from the newer connection")
        events += await until(b, Frame(1, newer, b"from the newer connection"))
        await intruder.aclose()
        events += await until(b, PeerUp)  # node 1 redials after losing its link
        assert b.epoch(1) > newer
        assert_epoch_order(events)


async def test_add_and_remove_peers_at_runtime() -> None:
    addresses = {1: unique_memory_address(), 2: unique_memory_address()}
    async with Mesh(make_config(1), addresses[1], {}, **FAST) as a:
        async with Mesh(make_config(2), addresses[2], {1: addresses[1]}, **FAST):
            a.add_peer(2, addresses[2])
            with pytest.raises(ValueError, match="already"):
                a.add_peer(2, addresses[2])
            await until(a, PeerUp)
            await a.remove_peer(2)
            down = (await until(a, PeerDown))[-1]
            assert isinstance(down, PeerDown) and down.reason == "peer removed"
            with pytest.raises(UnknownPeerError):
                a.send_nowait(2, b"x")
            with pytest.raises(UnknownPeerError):
                await a.remove_peer(2)


async def test_a_peer_readdressed_is_dialed_at_its_new_address() -> None:
    addresses = {1: unique_memory_address(), 2: unique_memory_address()}
    async with Mesh(make_config(1), addresses[1], {2: unique_memory_address()}, **FAST) as a:
        async with Mesh(make_config(2), addresses[2], {1: addresses[1]}, **FAST):
            await eventually(lambda: a.counters(2).connect_failures)  # a dial there failed
            assert not a.is_up(2)  # nothing listens at its first address
            with pytest.raises(ValueError, match="no scheme"):
                a.readdress(2, "127.0.0.1:7001")
            with pytest.raises(UnknownPeerError):
                a.readdress(3, addresses[2])
            a.readdress(2, addresses[2])
            assert a.peers[2] == addresses[2]
            await until(a, PeerUp)


class _Held(Transport):
    """``held:`` addresses reach nothing; each dial waits for ``release`` first."""

    def __init__(self) -> None:
        self.dialing: list[str] = []
        self.release = asyncio.Event()

    async def connect(self, address: str, config: Any, *, ssl_context: Any = None) -> Any:
        self.dialing.append(address)
        await self.release.wait()
        raise ConnectionRefusedError(f"nothing listens at {address}")

    async def listen(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


async def test_failed_dials_are_counted_at_the_address_they_began_at() -> None:
    """A dial begun before the peer was readdressed is not counted at its new address."""
    held = _Held()
    schemes = SchemeTable.builtin().with_transport("held", held)
    async with Mesh(make_config(1), None, {2: "held://a"}, schemes=schemes, **FAST) as mesh:  # type: ignore[arg-type]
        await eventually(lambda: held.dialing == ["held://a"])
        mesh.readdress(2, "held://b")
        held.release.set()
        await eventually(lambda: len(held.dialing) >= 2)
        assert held.dialing[1] == "held://b"
        assert mesh.counters(2).connect_failures >= 1
        await eventually(lambda: mesh.failed_here(2) == mesh.counters(2).connect_failures - 1)


async def test_mesh_validates_its_peer_table() -> None:
    with pytest.raises(ValueError, match="own id"):
        Mesh(make_config(1), None, {1: "memory://self"})
    with pytest.raises(ValueError, match="no scheme"):
        Mesh(make_config(1), None, {2: "127.0.0.1:7001"})


async def test_event_stream_ends_when_the_mesh_closes() -> None:
    mesh = Mesh(make_config(1), unique_memory_address(), {})
    async with mesh:
        pass
    assert [event async for event in mesh.events] == []
    with pytest.raises(anyio.EndOfStream):
        await mesh.events.receive()


async def test_dialing_keeps_retrying_after_non_socket_errors() -> None:
    async def idle(channel: object) -> None:
        pass

    from lazily_transports import listen

    async with listen("ws://127.0.0.1:0/right", make_config(2), idle) as listener:
        wrong = listener.address.replace("/right", "/wrong")  # answers HTTP 404
        async with Mesh(make_config(1), None, {2: wrong}, **FAST) as mesh:
            with anyio.fail_after(5):
                while mesh.counters(2).connect_failures < 3:  # noqa: ASYNC110 - polls a counter
                    await asyncio.sleep(0.02)
            assert not mesh.is_up(2)


async def test_disconnect_drops_the_connection_and_the_link_comes_back(short_tmp: Path) -> None:
    addresses = {1: f"unix://{short_tmp}/a.sock", 2: f"unix://{short_tmp}/b.sock"}
    async with node(1, addresses) as a, node(2, addresses) as b:
        events = await until(a, PeerUp)
        await until(b, PeerUp)
        first = a.epoch(2)
        a.disconnect(2, "sent a malformed frame")
        down = await until(a, PeerDown)
        assert down[-1] == PeerDown(2, first, "sent a malformed frame")
        events += down
        events += await until(a, PeerUp)
        assert a.epoch(2) > first
        await until(b, PeerUp)
        assert b.send_nowait(1, b"again")
        events += await until(a, Frame)
        assert events[-1] == Frame(2, a.epoch(2), b"again")
        with pytest.raises(UnknownPeerError):
            a.disconnect(9, "nobody")
    assert_epoch_order(events)
