"""CommitPipeline: what a member may release after a step, and when.

One pure class, free of clocks and I/O, used by the asyncio driver and by the
simulator's member alike. A step's output (:class:`~.ready.Ready`) holds votes,
acknowledgements and entries that the step's journal writes vouch for: votes and
acknowledgements may leave the member only after an fsync that *started after* those
writes has completed, in step order. A leader's AppendEntries leave at once, before
its own journal write: it writes its log in parallel with replication and counts its
own copy towards a majority only once that copy is durable (:mod:`.durable_commit`).
Results of applied entries and reader events leave at once too: an entry applies only
once a majority, this member included when it is the leader, holds it durably.

A failed write or fsync *stalls* the pipeline: the journal's unsynced records can no
longer be trusted (after a failed fsync the kernel may have dropped them), so nothing
held may leave until the caller has written every unsynced record again and an fsync
of that write has succeeded (:meth:`CommitPipeline.recovered`). A failed fsync is
never retried as if its data were safe.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from .ready import NOTHING, Ready

#: Messages that leave before the fsync of the step that produced them: a leader's
#: AppendEntries (see the module docstring), and its answer telling a follower where the
#: command it forwarded sits in the log (no durability claim; it must not trail the
#: entries, or the follower applies its command before it knows to wait for it).
EARLY = frozenset({"append_entries", "apply_command_response"})


class CommitPipeline:
    """The fsync/hold/release rules of one member (see the module docstring)."""

    def __init__(self) -> None:
        self._held: deque[tuple[int, Ready]] = deque()
        self._written = 0
        self._synced = 0
        self._syncing: int | None = None
        #: Why the journal cannot be written, while it cannot (``None`` when healthy).
        self.stall: str | None = None

    @property
    def held(self) -> int:
        """Step outputs waiting for an fsync."""
        return len(self._held)

    @property
    def idle(self) -> bool:
        """Nothing held, nothing unsynced, no fsync under way."""
        return not self._held and self._written == self._synced and self._syncing is None

    def stepped(
        self, ready: Ready, write: Callable[[], bool],
        early: Callable[[Ready], None] | None = None,
    ) -> tuple[list[Ready], OSError | None]:
        """After a step: run ``write`` (it hands the step's records to the OS and says
        whether any need an fsync) and admit the step's output. Returns what may leave
        now, and the write's error (then call :meth:`failed`). ``early``, when given,
        receives the messages that need no fsync (:data:`EARLY`) before ``write`` runs:
        a leader's appends then leave before its own write."""
        if ready is NOTHING:  # most halves of a step: nothing to admit, nothing leaves
            try:
                wrote = write()
            except OSError as exc:
                self._written += 1
                return [], exc
            if wrote:
                self._written += 1
            return [], None
        if early is not None and ready.messages and self.stall is None:
            now = ready.take_messages(EARLY)
            if now.messages:
                early(now)
        try:
            wrote, error = write(), None
        except OSError as exc:
            wrote, error = True, exc
        return self.admit(ready, wrote=wrote), error

    def admit(self, ready: Ready, *, wrote: bool) -> list[Ready]:
        """Take one step's output; return what may leave now (nothing when the step
        produced nothing that may). ``wrote``: the step handed records to the OS (or
        tried to and failed), so its output needs an fsync."""
        if wrote:
            self._written += 1
        if not self._held and self._written == self._synced and self.stall is None:
            return [ready]
        now = (ready.take_results() if ready.events or ready.completions or ready.orphans
               else None)
        if self.stall is None and ready.messages:
            early = ready.take_messages(EARLY)
            if early.messages:
                if now is None:
                    now = early
                else:
                    now.messages = early.messages
        if ready.messages or ready.membership:  # an empty output waits for nothing
            self._held.append((self._written, ready))
        return [] if now is None else [now]

    def start_fsync(self) -> int | None:
        """Whether an fsync should start now; returns the step it covers, or ``None``."""
        if self._syncing is not None or self.stall is not None or self._written == self._synced:
            return None
        self._syncing = self._written
        return self._syncing

    @property
    def syncing(self) -> bool:
        return self._syncing is not None

    def fsync_done(self) -> list[Ready]:
        """The fsync from :meth:`start_fsync` succeeded; return what it releases."""
        target, self._syncing = self._syncing, None
        if target is None or self.stall is not None:
            return []
        self._synced = max(self._synced, target)
        return self._release()

    def failed(self, reason: str) -> bool:
        """A write or fsync failed: stall. Returns True when the pipeline was healthy."""
        self._syncing = None
        healthy = self.stall is None
        self.stall = reason
        return healthy

    def recovered(self) -> list[Ready]:
        """Every unsynced record was written again and fsynced: release everything."""
        self.stall = None
        self._syncing = None
        self._synced = self._written
        return self._release()

    def _release(self) -> list[Ready]:
        out: list[Ready] = []
        while self._held and self._held[0][0] <= self._synced:
            out.append(self._held.popleft()[1])
        return out
