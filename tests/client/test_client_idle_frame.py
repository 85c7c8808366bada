"""A client link waiting for its next frame holds nothing of its last one: decoded, a
request's values take tens of times its bytes (a 0.56 MB frame of decimals, 15 MB), so
each of a client's 64 links idling after one such frame held about a gigabyte."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import cbor2
import pytest

from lazily_queue.client import protocol as P
from tests.client.one_member import answers, linked, one_member

pytestmark = pytest.mark.timeout(60)


class Built:
    """A value decoding built, which the test sees go."""


async def test_a_link_waiting_for_its_next_frame_holds_no_value_of_its_last(
        monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[weakref.ref[Built]] = []
    decode = P.decode

    def tracked(data: bytes, **limits: Any) -> list[Any]:
        frame = decode(data, **limits)
        if frame[1] == P.PING and len(frame) == 3 and frame[2] == "tracked":
            value = Built()
            built.append(weakref.ref(value))
            frame[2] = [value]
        return frame

    monkeypatch.setattr(P, "decode", tracked)
    async with one_member() as node:
        stream = await linked(node)
        batch = [0, P.BATCH, [[2, P.PING, "tracked"], [3, P.PING, "tracked"]]]
        for frame in ([2, P.PING, "tracked"], batch):
            await stream.send(cbor2.dumps(frame))
            got = await answers(stream, len(frame[2]) if frame is batch else 1)
            assert all(answer[1] == P.OK for answer in got), got
            gc.collect()
            assert built and all(ref() is None for ref in built), "the idle link holds it"
        assert node.clients is not None and node.clients.stats()["connections"] == 1
        await stream.aclose()
