"""Every change we make to PySyncObj 0.3.17, in one place (the larger stand-ins it
installs live beside it: :mod:`.safe_pickle`, :mod:`.engine_clock`).

Process-wide patches (installed once by :func:`install`):

- ``restricted-pickle``: PySyncObj pickles commands, membership entries and large-entry
  chunks and unpickles what peers send. Pickles are written with protocol 4 (which
  needs no globals for bytes) and read by a loader that first scans the opcodes and
  refuses anything but plain values without shared references, then refuses every
  global (see :mod:`.safe_pickle`); the library's fallback to the unrestricted
  pure-Python unpickler is removed.
- ``no-pipe-notifier``: with ``appendEntriesUseBatch=False`` the library writes one byte
  per submitted command into a pipe; 65,536 submits between ticks raise
  ``BlockingIOError``. Our driver ticks on its own, so the notifier is disabled (and the
  engine's configuration, below, never creates one).
- ``journal-object``: ``createJournal`` accepts a ready journal object, so the engine
  runs on our durable, checksummed journal instead of the library's unsynced one.
- ``snapshot-object``: the internal ``Serializer`` may be replaced by a ready object, so
  snapshots are CBOR files we write, fsync and validate (no fork, no pickle).
- ``engine-clock``: the library's ``monotonicTime`` and ``random`` are routed through
  the clock and random generator of the engine being driven, so a whole cluster can
  run on virtual time in one process.

Per-engine patches (applied by :class:`~lazily_queue.raft.engine.RaftEngine` around
message delivery; each can be switched off for tests that demonstrate the defect):

- ``forward-only-next-index``: on every successful ``next_node_idx`` the leader sets the
  follower's ``nextIndex`` back to the acknowledged index + 1 and re-sends everything in
  flight. A successful acknowledgement may only move ``nextIndex`` forward.
- ``no-spurious-truncation``: a follower truncates its log after ``prevLogIdx`` on any
  AppendEntries, conflict or not, so a stale or duplicated message drops entries the
  leader already counted. Matching entries are skipped first, truncation happens only
  on a real term conflict, and the commit index never passes the last entry the
  message vouched for.
- ``lowest-reset-next-index``: a follower answers every AppendEntries it cannot take
  with a reset to its own guess of ``nextIndex``; while the leader walks back over a
  divergent suffix one entry per round trip, the answers to the messages carrying new
  entries (``nextIndex`` = the follower's last index + 1) keep sending it back up, so
  under steady load the follower never catches up. The follower's log only grows
  through an AppendEntries it accepted, so between two successes the lowest reset is
  the one that holds; a higher one is stale.
- ``count-each-vote-once``: a candidate adds one to its tally for every
  ``response_vote`` of its term, so a duplicated message counts a voter twice and, in
  a five-member cluster, elects a second leader in a term that already has one.
  Each voter is counted once per term.
- ``one-membership-change-at-a-time``: the library means to refuse a configuration
  change while an earlier one is uncommitted, but never records the earlier one's
  index, so a leader cut off from the rest accepts one removal after another until it
  is a cluster of one that commits on its own, beside the majority's new leader. The
  index of each accepted change is recorded, so the library's own check refuses the
  next change until that one has applied.
- ``snapshot-messages-commit-nothing``: a follower handling an AppendEntries that
  carries a snapshot chunk (no ``prevLogIdx``) sets its commit index to the leader's,
  capped by its own last index, without any check that its log matches the leader's:
  a member back from a long absence with an uncommitted suffix the cluster has since
  replaced commits and applies that suffix. Such a message now moves the commit index
  only when it installed the snapshot.
- ``no-stale-snapshot-install``: a follower installs every complete snapshot it
  receives, replacing its stored snapshot and clearing its whole log, even when the
  snapshot is older than what it holds (a duplicated or delayed transmission): the
  entries after the snapshot, which it already acknowledged and the leader counted
  towards a majority, are gone, and its state goes back in time. A snapshot whose last
  entry is committed here or already in this log (same index and term) is refused;
  the log and the state stay, and the leader's next AppendEntries continues after it.
- ``pre-vote``: a member whose election deadline passes raises its term and asks for
  votes even when it cannot win (cut off from the majority, or with a stale log), so
  it keeps raising its term and, when it reconnects, deposes a healthy leader. It first
  runs a pre-vote round (Raft thesis §9.6, see :mod:`~lazily_queue.raft.prevote`): it
  raises its term only after a majority said it could win, and a member that heard
  from a live leader within the minimum election timeout says no. Leadership transfer
  skips the round.
- ``durable-leader-commit``: a leader counts itself towards every majority, which is
  only right while it sends entries after its own fsync. Ours sends them in parallel
  with its write (:mod:`~lazily_queue.raft.durable_commit`), so its commit index is
  clamped to what a majority holds durably, its own durable index included.
- ``membership-from-log``: on a restart the library starts from the members it was
  given and its snapshot's, and takes up the membership changes in its journal only as
  it applies them: a member that founded a cluster alone and added the others restarts
  believing it is alone and elects itself. Every change in the log takes effect when
  the engine starts, and applying a committed change changes nothing (it has been in
  effect since it was loaded, accepted or appended; see
  :mod:`~lazily_queue.raft.log_config`).
- ``paused-transfer``: a leadership transfer is refused unless the target's match index
  equals the leader's last index at that moment, and the leader goes on appending after
  sending ``timeout_now``: under steady writes the transfer is refused, or the target's
  election fails because the others hold more. Proposals pause while a transfer is in
  progress and ``timeout_now`` goes once the target caught up (see :mod:`.transfer`).
- ``safe-apply``: an exception while applying an entry escapes the tick before the
  applied index moves, so the node retries the same entry forever. Application is
  wrapped: the failure is logged and counted and the entry is skipped on every node.

Configuration the engine always uses (see ``RaftEngine``): ``appendEntriesUseBatch``
on, with the engine sending an AppendEntries itself after each round of appends and
when the driver publishes a new commit index (the library would send them only once per
heartbeat period; with the option off it sends one per command and another after every
commit), ``leaderFallbackTimeout``
about one second (otherwise a cut-off leader accepts writes for 30 s), no fork for
snapshots, and replicated commands kept below 64 KiB (the library's chunking of larger
entries is broken).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pysyncobj.journal as _ps_journal
import pysyncobj.pickle as _ps_pickle
import pysyncobj.serializer as _ps_serializer
import pysyncobj.syncobj as _ps_syncobj
import pysyncobj.version as _ps_version

from .engine_clock import RandomProxy, engine_env, monotonic
from .safe_pickle import (
    PICKLE_PROTOCOL,
    UnsafePickleError,
    restricted_load,
    restricted_loads,
    safe_dump,
    safe_dumps,
)

__all__ = [
    "ENGINE_PATCHES",
    "PICKLE_PROTOCOL",
    "PYSYNCOBJ_VERSION",
    "LogView",
    "UnsafePickleError",
    "append_entries_without_spurious_truncation",
    "count_each_vote_once",
    "disabled",
    "enabled",
    "engine_env",
    "install",
    "next_index_answer",
    "one_membership_change_at_a_time",
    "restricted_load",
    "restricted_loads",
    "safe_dump",
    "safe_dumps",
    "snapshot_is_stale",
]

PYSYNCOBJ_VERSION = "0.3.17"

ENGINE_PATCHES = frozenset({"forward-only-next-index", "no-spurious-truncation", "safe-apply",
                            "one-membership-change-at-a-time", "pre-vote",
                            "count-each-vote-once", "lowest-reset-next-index",
                            "snapshot-messages-commit-nothing", "durable-leader-commit",
                            "no-stale-snapshot-install", "membership-from-log",
                            "paused-transfer"})

_disabled: set[str] = set()
_installed = False


# -- installation ---------------------------------------------------------------------------


def _create_journal(journal_file: Any = None) -> Any:
    if isinstance(journal_file, _ps_journal.Journal):
        return journal_file
    return _original_create_journal(journal_file)


_original_create_journal = _ps_journal.createJournal
_original_serializer = _ps_serializer.Serializer


def _create_serializer(file_name: Any, *args: Any) -> Any:
    if hasattr(file_name, "setTransmissionData"):
        return file_name
    return _original_serializer(file_name, *args)


def install() -> None:
    """Apply the process-wide patches; idempotent. Refuses another PySyncObj version."""
    global _installed
    if _installed:
        return
    if _ps_version.VERSION != PYSYNCOBJ_VERSION:
        raise RuntimeError(
            f"lazily-queue is pinned to pysyncobj {PYSYNCOBJ_VERSION} and patches its "
            f"internals; found {_ps_version.VERSION}. Install pysyncobj=={PYSYNCOBJ_VERSION}."
        )
    _ps_pickle.loads = restricted_loads
    _ps_pickle.load = restricted_load
    _ps_pickle.dumps = safe_dumps
    _ps_pickle.dump = safe_dump
    _ps_journal.loads = restricted_loads
    _ps_journal.dumps = safe_dumps
    _ps_serializer.pickle = _ps_pickle
    _ps_syncobj.PIPE_NOTIFIER_ENABLED = False
    _ps_syncobj.createJournal = _create_journal
    _ps_syncobj.Serializer = _create_serializer
    _ps_syncobj.monotonicTime = monotonic
    _ps_syncobj.random = RandomProxy()
    _installed = True


def enabled(name: str) -> bool:
    """Whether the per-engine patch ``name`` is active."""
    if name not in ENGINE_PATCHES:
        raise KeyError(f"unknown engine patch {name!r}; known: {sorted(ENGINE_PATCHES)}")
    return name not in _disabled


@contextmanager
def disabled(*names: str) -> Iterator[None]:
    """Switch per-engine patches off inside the block (tests that show the defect)."""
    for name in names:
        enabled(name)
    added = [n for n in names if n not in _disabled]
    _disabled.update(added)
    try:
        yield
    finally:
        _disabled.difference_update(added)


# -- per-engine message patches ---------------------------------------------------------------


def next_index_answer(
    next_index: dict[Any, int], floors: dict[Any, int], node: Any, message: dict[str, Any],
    handle: Callable[[], None],
) -> None:
    """Run ``handle`` for a ``next_node_idx`` under two patches: a success never moves
    ``nextIndex`` back (``forward-only-next-index``), and a reset never raises it above
    the lowest reset since the last success (``lowest-reset-next-index``; ``floors``,
    cleared when leadership starts). Every follower's answer passes here: the patches'
    switches are read without a call."""
    success, reset = message.get("success"), message.get("reset")
    forward = success and not reset and "forward-only-next-index" not in _disabled
    before = next_index.get(node) if forward else None
    handle()
    if forward:
        after = next_index.get(node)
        if before is not None and after is not None and after < before:
            next_index[node] = before
    if "lowest-reset-next-index" in _disabled:
        return
    if success:
        floors.pop(node, None)
        return
    if not reset:
        return
    floor = floors.get(node)
    value = int(message["next_node_idx"])
    if floor is not None and value > floor:
        if node in next_index:
            next_index[node] = floor
        return
    floors[node] = value


def count_each_vote_once(
    counted: set[tuple[int, str]], term: int, voter: str, message: dict[str, Any],
    handle: Callable[[], None],
) -> None:
    """Run ``handle`` for a ``response_vote`` unless ``voter`` already counted in ``term``."""
    if not enabled("count-each-vote-once") or message.get("term") != term:
        handle()
        return
    if (term, voter) in counted:
        return
    if any(t != term for t, _ in counted):
        counted.clear()
    counted.add((term, voter))
    handle()


def one_membership_change_at_a_time(
    change: Callable[[Any], bool], next_index: Callable[[], int],
    record: Callable[[int], None],
) -> Callable[[Any], bool]:
    """Wrap the library's change-acceptance check so an accepted change is remembered."""

    def accept(request: Any) -> bool:
        accepted = change(request)
        if accepted and enabled("one-membership-change-at-a-time"):
            record(next_index())
        return accepted

    return accept


class LogView:
    """What the truncation patch needs to know about the local log."""

    def __init__(
        self,
        term_at: Callable[[int], int | None],
        last_index: Callable[[], int],
        commit_index: Callable[[], int],
        set_commit_index: Callable[[int], None],
        suppress_truncation: Callable[[int | None], None],
    ) -> None:
        self.term_at = term_at
        self.last_index = last_index
        self.commit_index = commit_index
        self.set_commit_index = set_commit_index
        self.suppress_truncation = suppress_truncation


def append_entries_without_spurious_truncation(
    log: LogView,
    current_term: int,
    message: dict[str, Any],
    handle: Callable[[dict[str, Any]], None],
) -> None:
    """Deliver a regular AppendEntries so that only a real conflict truncates the log."""
    if (
        "no-spurious-truncation" in _disabled  # every append passes: read without a call
        or "prevLogIdx" not in message
        or message.get("transmission") is not None
        or message.get("term", -1) < current_term
    ):
        handle(message)
        return
    entries = list(message.get("entries") or ())
    prev_idx: int = message["prevLogIdx"]
    prev_term: int = message["prevLogTerm"]
    covered = entries[-1][1] if entries else prev_idx
    skip = 0
    for entry in entries:
        if log.term_at(entry[1]) != entry[2]:
            break
        skip += 1
    if skip:
        prev_idx, prev_term = entries[skip - 1][1], entries[skip - 1][2]
        entries = entries[skip:]
        message = dict(message, prevLogIdx=prev_idx, prevLogTerm=prev_term, entries=entries)
    # Nothing left to append but the log goes further: the suffix is not in conflict
    # with anything this message says, so it must survive.
    guard = not entries and log.last_index() > prev_idx
    commit_before = log.commit_index()
    if guard:
        # The journal then shows the log as ending at prev_idx to the handler's
        # "entries from prevLogIdx" read, so it neither rolls back membership entries
        # nor deletes anything.
        log.suppress_truncation(prev_idx)
    try:
        handle(message)
    finally:
        if guard:
            log.suppress_truncation(None)
    commit_after = log.commit_index()
    limit = max(commit_before, min(int(message.get("commit_index", 0)), covered))
    if commit_after > limit:
        log.set_commit_index(limit)


def snapshot_is_stale(log: LogView, last: tuple[bytes, int, int]) -> bool:
    """Whether a received snapshot ending at ``last`` adds nothing to this member: its last
    entry is committed here or already in the log with the same term."""
    if not enabled("no-stale-snapshot-install"):
        return False
    _, index, term = last
    return index <= log.commit_index() or log.term_at(index) == term


def snapshot_messages_commit_nothing(
    log: LogView, message: dict[str, Any], installed: Callable[[], int],
    handle: Callable[[dict[str, Any]], None],
) -> None:
    """Deliver an AppendEntries without ``prevLogIdx`` (a snapshot chunk): unless it
    installed the snapshot, the commit index stays where it was."""
    if not enabled("snapshot-messages-commit-nothing") or "prevLogIdx" in message:
        handle(message)
        return
    commit_before, installed_before = log.commit_index(), installed()
    handle(message)
    if installed() == installed_before and log.commit_index() > commit_before:
        log.set_commit_index(commit_before)
