"""The engine's log reads from the journal's entry list give the library's own answers."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from pysyncobj import SyncObj

from lazily_queue.raft.disk import OsDisk
from lazily_queue.raft.journal import DurableJournal
from lazily_queue.raft.log_reads import read_log_directly

_LIBRARY_ENTRIES = SyncObj._SyncObj__getEntries  # type: ignore[attr-defined]


def _journal(tmp_path: Path, first: int, count: int) -> DurableJournal:
    journal = DurableJournal(OsDisk(sync=False), str(tmp_path))
    for index in range(first, first + count):
        journal.add(b"c" * (index % 7 + 1), index, 1 + index // 4)
    return journal


def _library(journal: DurableJournal) -> Any:
    return SimpleNamespace(_SyncObj__raftLog=journal)


@pytest.mark.parametrize("mask", [None, 3, 7, 12])
def test_entries_last_index_and_term_match_the_library_with_and_without_a_masked_tail(
    tmp_path: Path, mask: int | None,
) -> None:
    journal = _journal(tmp_path, 3, 10)  # indexes 3..12
    journal.mask_tail_after(mask)
    ours = SimpleNamespace()
    read_log_directly(ours, journal)
    library = _library(journal)
    assert ours._SyncObj__getCurrentLogIndex() == journal[-1][1] == 12
    assert ours._SyncObj__getCurrentLogTerm() == journal[-1][2]
    for start in [None, 0, 2, 3, 4, 7, 12, 13, 20]:
        for count in [None, 0, 1, 2, 5, 30]:
            for size in [None, 1, 3, 8, 20, 1000]:
                assert (ours._SyncObj__getEntries(start, count, size)
                        == _LIBRARY_ENTRIES(library, start, count, size)), (start, count, size)


def test_a_journal_replaced_in_memory_is_read_afresh(tmp_path: Path) -> None:
    journal = _journal(tmp_path, 1, 5)
    ours = SimpleNamespace()
    read_log_directly(ours, journal)
    journal.deleteEntriesTo(2)  # the library compacts: the entry list is rebuilt
    journal.clear()
    journal.add(b"x", 9, 4)
    assert ours._SyncObj__getCurrentLogIndex() == 9
    assert ours._SyncObj__getEntries(9) == [(b"x", 9, 4)]
