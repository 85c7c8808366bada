"""What a client is told when its one member's disk is full: an error whose message
agrees with its ``applied``, and, once the member restarts on the full disk,
``StorageUnavailable`` (the member cannot write), not ``Unreachable``."""

from __future__ import annotations

from pathlib import Path

import pytest

from lazily_queue import ClientAccess, ClientGrant, Node, StorageUnavailable, connect
from tests.tmpfs import fill, mounted_tmpfs

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

TOKEN = "token-of-the-producer"


def _member(root: Path, disk: Path) -> Node:
    return Node(1, data_dir=disk / "data", listen=f"unix:{root}/n1.sock", secret="s" * 16,
                clients=ClientAccess([ClientGrant("producer", TOKEN, produce=["*"])],
                                     listen=f"unix:{root}/c1.sock"))


async def test_a_full_disk_is_named_and_the_message_agrees_with_applied(
    short_tmp: Path,
) -> None:
    with mounted_tmpfs(short_tmp / "disk", "size=4m") as disk:
        async with _member(short_tmp, disk) as member:
            await member.wait_for_leader()
            async with connect([f"unix:{short_tmp}/c1.sock"], ("producer", TOKEN),
                               op_timeout=5) as client:
                q = client.queue("q")
                with pytest.raises(StorageUnavailable) as info:
                    for _ in range(200):  # 10 MB: more than the disk holds
                        await q.push(b"x" * 50_000)
        text = str(info.value)
        if info.value.applied is None:  # the member's own answer was to a later attempt
            assert text.endswith("its outcome is unknown: that answer was to its last "
                                 "attempt, and an earlier one may have applied"), text
        else:
            assert info.value.applied is False and "unknown" not in text, text
        fill(disk)
        async with _member(short_tmp, disk):  # restarted on the full disk
            async with connect([f"unix:{short_tmp}/c1.sock"], ("producer", TOKEN),
                               op_timeout=5) as client:
                with pytest.raises(StorageUnavailable) as again:
                    await client.queue("q").push(b"y" * 50_000)
        assert again.value.applied is False
        assert str(again.value).startswith(
            "queue_declare: no member able to write to its disk before its timeout, it was "
            "not applied ("), again.value
        assert "No space left on device" in str(again.value)
