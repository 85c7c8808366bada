"""PySyncObj's reads of its log, answered from the journal's entry list directly.

The library reads its log through three helpers (the last index, the last term, a run
of entries from an index) that each index the journal one or more times, a Python call
apiece, several times per message and per applied entry. :func:`read_log_directly`
puts functions in their place on one engine that give the same answers, the journal's
masked tail (:meth:`~.journal.DurableJournal.mask_tail_after`) included, from the
entry list in one call.
"""

from __future__ import annotations

from typing import Any

from .journal import DurableJournal
from .records import Entry


def read_log_directly(engine: Any, journal: DurableJournal) -> None:
    """Answer ``engine``'s log reads from ``journal`` (see the module docstring)."""

    def current_index() -> int:
        return journal._entries[-1][1]

    def current_term() -> int:
        return journal._entries[-1][2]

    def entries_from(start: int | None, count: int | None = None,
                     max_bytes: int | None = None) -> list[Entry]:
        entries = journal._entries
        first = entries[0][1]
        if start is None or start < first:
            return []
        at = start - first
        if count is not None:
            found = entries[at:at + count]
        elif start == journal._mask_from:
            found = entries[at:at + 1]  # what the journal's masked slice shows
        else:
            found = entries[at:]
        if max_bytes is None:
            return found
        total = 0
        for end, entry in enumerate(found, 1):
            total += len(entry[0])
            if total >= max_bytes:
                return found[:end]
        return found

    engine._SyncObj__getCurrentLogIndex = current_index
    engine._SyncObj__getCurrentLogTerm = current_term
    engine._SyncObj__getEntries = entries_from
