"""The member addresses a node keeps in its journal's metadata stay few and small."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lazily_queue.member_addresses import KEY, MAX_CHARS, MAX_KEPT, SavedAddresses
from lazily_queue.raft.disk import OsDisk
from lazily_queue.raft.journal import DurableJournal
from lazily_queue.raft.meta import META_MAX_BYTES, encode_meta
from lazily_queue.replicated.events import MemberAddressed, QueueChanged


def _journal(tmp: Path) -> DurableJournal:
    return DurableJournal(OsDisk(sync=False), str(tmp))


def test_addresses_are_kept_across_a_restart_and_bounded(tmp_path: Path) -> None:
    journal = _journal(tmp_path)
    saved = SavedAddresses(journal)
    saved.observe([MemberAddressed("2", "tcp://b:2"), QueueChanged("q", 1, 0)])
    saved.observe([MemberAddressed("3", "x" * (MAX_CHARS + 1))])  # too long: not kept
    many = [MemberAddressed(str(n), "tcp://" + "h" * 400 + f":{n}") for n in range(4, 200)]
    saved.observe(many)
    saved.observe([MemberAddressed("2", "tcp://b:22")])  # applied last: kept
    journal.sync()
    again = SavedAddresses(_journal(tmp_path))
    assert len(again.known) == MAX_KEPT
    assert again.get("2") == "tcp://b:22" and again.get("3") is None
    assert again.get("199") == "tcp://" + "h" * 400 + ":199" and again.get("4") is None
    assert len(encode_meta(journal.meta, 1)) < META_MAX_BYTES // 2


def test_what_the_metadata_holds_is_checked(tmp_path: Path) -> None:
    journal = _journal(tmp_path)
    for odd in ([1, 2], "tcp://a:1", {"2": 5, 3: "tcp://c:3", "4": "tcp://d:4"}):
        journal.set_meta(KEY, odd)
        kept: dict[str, Any] = SavedAddresses(journal).known
        assert kept == ({"4": "tcp://d:4"} if isinstance(odd, dict) else {})
    assert SavedAddresses(None).get("2") is None
