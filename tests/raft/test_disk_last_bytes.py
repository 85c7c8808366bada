"""A disk with less room left than a journal preallocation still takes the records that
fit: a member whose disk was full and got some room back writes again."""

from __future__ import annotations

from pathlib import Path

from lazily_queue import testing
from lazily_queue.node import Node
from lazily_queue.raft.journal import DurableJournal

from .faulty_disk import FaultyDisk

STEP = 16 * 1024  # the disks' preallocation here


def test_records_fit_in_less_room_than_a_preallocation(tmp_path: Path) -> None:
    disk = FaultyDisk(preallocate=STEP)
    disk.ceiling = 2 * STEP + STEP // 2  # the second growth fits, a third whole one not
    j = DurableJournal(disk, str(tmp_path))
    payload = b"x" * 1000
    for index in range(1, 41):  # about 40 KiB of records: past two preallocations
        j.add(payload, index, 1)
        j.sync()
    assert disk.failures >= 1  # a whole preallocation was refused on the way
    again = DurableJournal(FaultyDisk(), str(tmp_path))
    assert [e[1] for e in again[:]] == list(range(1, 41)) and again.torn_bytes == 0


async def test_a_member_with_room_for_its_records_acknowledges_them(tmp_path: Path) -> None:
    disk = FaultyDisk(preallocate=STEP)
    kwargs = {"data_dir": tmp_path, "listen": f"unix:{tmp_path}/n.sock", "secret": "s",
              "engine": testing.FAST_ENGINE, "disk_retry": 0.05}
    async with Node(1, disk=disk, **kwargs) as node:  # type: ignore[arg-type]
        await node.wait_for_leader()
        journal = disk._files[node._journal.path]  # type: ignore[union-attr]
        room = journal.allocated + STEP // 2
        disk.ceiling = room  # less room than one preallocation past what the file holds
        q = node.queue("q")
        pushed = 0
        while journal.end < room - STEP // 4:
            await q.push("v" * 300)
            pushed += 1
        assert node.status()["disk"]["writable"] is True and disk.failures >= 1
    async with Node(1, **kwargs) as again:  # type: ignore[arg-type]
        await again.wait_for_leader()
        await again.barrier()
        assert again.queue("q").len() == pushed
