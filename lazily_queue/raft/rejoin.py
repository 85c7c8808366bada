"""Rejoining empty after a corrupted journal, without voting on a log the member lost.

A member whose journal fails its checks must not apply it. It is wiped and rejoins
empty, catching up from the leader. Wiping is only safe with two precautions, because
the member may have acknowledged entries that a leader then counted as committed:

- its term and vote (the metadata file) are kept, so it cannot vote twice in a term;
- it records a *floor*: the newest ``(term, index)`` found among the records that still
  pass their checksum, anywhere in the file. Until its log is at least that up to date
  it collects no votes and grants one only to a candidate whose log reaches the floor
  (see :meth:`RaftEngine.deliver`), as it would have with its log: otherwise its empty
  log could elect a member that lacks entries committed with its help.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from .disk import Disk
from .meta import MetaStore, default_meta
from .records import scan_newest
from .snapshot import SnapshotError, decode_snapshot

if TYPE_CHECKING:
    from .journal import DurableJournal

log = logging.getLogger(__name__)

FLOOR_KEY = "rejoin_floor"


def wipe_for_rejoin(disk: Disk, directory: str, snapshot_path: str, *,
                    name: str = "journal") -> tuple[int, int]:
    """Remove the journal and snapshot of a member, keep its term and vote, set its floor.

    Returns the floor. The member then starts empty and catches up from the leader.
    """
    log_path, meta_path = f"{directory}/{name}.log", f"{directory}/{name}.meta"
    floor = scan_newest(disk.read(log_path) or b"")
    store = MetaStore(disk, meta_path)
    meta: dict[str, Any] = default_meta()
    try:
        meta = store.load()
    except Exception as exc:
        log.error("%s: unreadable metadata (%s); the member rejoins without its vote",
                  meta_path, exc)
    previous = meta.get(FLOOR_KEY)
    if isinstance(previous, list) and len(previous) == 2:
        floor = max(floor, (int(previous[0]), int(previous[1])))
    snapshot = disk.read(snapshot_path)
    if snapshot is not None:
        try:
            last = decode_snapshot(snapshot)["last"]
            floor = max(floor, (int(last[2]), int(last[1])))
        except Exception:
            log.warning("%s: unreadable snapshot is dropped as well", snapshot_path)
    meta[FLOOR_KEY] = list(floor)
    meta["commit"] = 1
    store.store(meta)  # durable first: a wipe cut short must still withhold the vote
    disk.remove(log_path)
    disk.remove(snapshot_path)
    log.error("%s: journal wiped; the member rejoins empty and will not vote until its log "
              "reaches term %d index %d", directory, floor[0], floor[1])
    return floor


def floor_of(meta: dict[str, Any]) -> tuple[int, int] | None:
    """The member's floor from its journal metadata, or ``None`` when it has none."""
    value = meta.get(FLOOR_KEY)
    if isinstance(value, list) and len(value) == 2:
        return int(value[0]), int(value[1])
    return None


def check_continues(journal: DurableJournal, doc: dict[str, Any]) -> None:
    """Refuse a journal that begins after the stored snapshot ends (an older snapshot put
    back): the engine would drop the whole journal, entries committed after it too."""
    if len(journal) and journal.first_index > doc["prev"][1]:
        raise SnapshotError(
            f"{journal.path} begins at entry {journal.first_index}, after the snapshot's "
            f"last entries ({doc['prev'][1]}, {doc['last'][1]}): the snapshot is older than "
            "the journal (put back from a copy?) and the entries between are missing")
