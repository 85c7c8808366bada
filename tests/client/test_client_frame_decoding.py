"""A member decodes a client's large request frames off its event loop: a megabyte of
decimals took a third of a second to decode, in which a leader sent no heartbeat (its
followers elected another). Frames of one link are still handled in order."""

from __future__ import annotations

import threading
from decimal import Decimal
from typing import Any

import cbor2
import pytest

from lazily_queue.client import protocol as P
from lazily_queue.client.frame_decoding import THREAD_BYTES
from lazily_queue.replicated import ops
from tests.client.one_member import linked, one_member

pytestmark = pytest.mark.timeout(60)


async def test_a_large_frame_is_decoded_off_the_loop_and_answered_in_order(
        monkeypatch: pytest.MonkeyPatch) -> None:
    threads: list[tuple[int, bool]] = []
    decode = P.decode

    def recording(data: bytes, *, max_bytes: int) -> list[Any]:
        threads.append((len(data), threading.current_thread() is threading.main_thread()))
        return decode(data, max_bytes=max_bytes)

    monkeypatch.setattr(P, "decode", recording)
    async with one_member() as node:
        stream = await linked(node)  # its session named in its hello
        large = cbor2.dumps([3, P.PING, [Decimal("1.5")] * (THREAD_BYTES // 2)])
        await stream.send(large)
        await stream.send(cbor2.dumps([4, P.OP, 1, 1, ops.QUEUE_DECLARE, ["q", None], 5000]))
        await stream.send(large[:-100])  # unreadable: refused as one frame
        answers = [cbor2.loads(await stream.receive()) for _ in range(3)]
        assert [a[:2] for a in answers] == [[3, P.OK], [4, P.OK], [0, P.ERROR]], answers
        assert "unreadable frame" in answers[2][2][1]
    assert [(size >= THREAD_BYTES, main) for size, main in threads[-3:]] == [
        (True, False), (False, True), (True, False)]
