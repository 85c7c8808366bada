"""Fixes the simulator found, switchable off to show that a fixture still catches the bug.

``--without NAME`` (or :func:`without`) undoes one fix for the run, so a regression
fixture can be checked to fail without it and pass with it.
"""

from __future__ import annotations
import __future__

import importlib
import inspect
import re
import textwrap
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from lazily_queue.raft import journal, patches, records, snapshot, snapshot_resend
from lazily_queue.raft.engine import RaftEngine


def _no_rejoin_floor() -> Callable[[], None]:
    original = RaftEngine.rejoining
    RaftEngine.rejoining = property(lambda self: False)  # type: ignore[assignment,method-assign]

    def restore() -> None:
        RaftEngine.rejoining = original  # type: ignore[method-assign]

    return restore


def _no_resync_after_bad_record() -> Callable[[], None]:
    original = records._valid_record_after
    records._valid_record_after = lambda *_args: None

    def restore() -> None:
        records._valid_record_after = original

    return restore


def _patch_off(name: str) -> Callable[[], Callable[[], None]]:
    def undo() -> Callable[[], None]:
        context = patches.disabled(name)
        context.__enter__()

        def restore() -> None:
            context.__exit__(None, None, None)

        return restore

    return undo


def _no_snapshot_checksum() -> Callable[[], None]:
    original = snapshot.decode_snapshot
    head = len(snapshot.MAGIC) + 4

    def unchecked(data: bytes) -> dict[str, Any]:
        return original(data[head:] if data[:4] == snapshot.MAGIC else data)

    snapshot.decode_snapshot = unchecked

    def restore() -> None:
        snapshot.decode_snapshot = original

    return restore


def _commit_index_ahead_of_fsync() -> Callable[[], None]:
    original = journal.DurableJournal.write

    def write(self: journal.DurableJournal) -> bool:
        self._durable_index = 1 << 62
        return bool(original(self))

    journal.DurableJournal.write = write  # type: ignore[method-assign]

    def restore() -> None:
        journal.DurableJournal.write = original  # type: ignore[method-assign]

    return restore


def _swap(owner: Any, name: str, replacement: Any) -> Callable[[], None]:
    original = getattr(owner, name)
    setattr(owner, name, replacement)

    def restore() -> None:
        setattr(owner, name, original)

    return restore


def _release_before_fsync() -> Callable[[], None]:
    """The commit pipeline lets every step's output leave at once, fsynced or not."""
    from lazily_queue.raft.pipeline import CommitPipeline

    def admit(self: CommitPipeline, ready: Any, *, wrote: bool) -> list[Any]:
        if wrote:
            self._written += 1  # fsyncs still happen, they just hold nothing back
        return [ready]

    return _swap(CommitPipeline, "admit", admit)


def _trust_failed_fsync() -> Callable[[], None]:
    """After a failed fsync, keep going as if the written records were safe."""
    return _swap(journal.DurableJournal, "discard_unsynced", lambda self: None)


def _damaged_tail_is_torn() -> Callable[[], None]:
    """Cut a damaged last record like a torn one, with no floor."""
    original = records._classify

    def classify(data: bytes, pos: int, content: int, entries: list[Any]) -> records.Tail:
        tail = original(data, pos, content, entries)
        return records.Tail(tail.size, False, tail.records)

    return _swap(records, "_classify", classify)


def _strict_queue_restore() -> Callable[[], None]:
    """Restore a queue through the constructor, which refuses more than its capacity."""
    from lazily_queue.core.fifo import Fifo

    original = Fifo.__dict__["restored"].__func__

    def restored(cls: type[Fifo[Any]], capacity: Any, elements: Any, closed: bool,
                 id_state: Any = None) -> Any:
        items = list(elements)
        cls(capacity, items)  # refuses more elements than the capacity
        return original(cls, capacity, items, closed, id_state)

    return _swap(Fifo, "restored", classmethod(restored))


def _stored_snapshot_unchecked() -> Callable[[], None]:
    """Load a stored snapshot without first checking that its state restores: what of
    it restores before the first error is installed."""
    from lazily_queue.raft import replica
    from lazily_queue.replicated import state_snapshot
    from lazily_queue.replicated.op_table import SECTIONS
    from lazily_queue.replicated.state_machine import StateMachine

    def unchecked(fsm: Any, state: Any) -> Any:
        loaded = StateMachine(fsm.max_client_sessions)
        try:
            state_snapshot.restore(loaded, SECTIONS, state)
        except Exception:
            pass
        return loaded

    return _swap(replica, "check_stored_state", unchecked)


def _method_without(module: str, owner: str | None, name: str, fix: str, instead: str
                    ) -> Callable[[], Callable[[], None]]:
    """``<owner>.<name>`` of ``module`` (``owner`` ``None``: the module's function
    ``name``) recompiled from its source with its fix (the regular expression ``fix``,
    found once) replaced by ``instead``: the code as it was before the fix."""

    def undo() -> Callable[[], None]:
        found_in = importlib.import_module(module)
        holder = found_in if owner is None else getattr(found_in, owner)
        source = textwrap.dedent(inspect.getsource(getattr(holder, name)))
        before, found = re.subn(fix, instead, source, flags=re.S)
        if found != 1:
            raise RuntimeError(f"{owner or module}.{name}: the fix to undo is not found in "
                               "its source")
        made: dict[str, Any] = {}
        code = compile(before, str(found_in.__file__), "exec",
                       flags=__future__.annotations.compiler_flag, dont_inherit=True)
        exec(code, vars(found_in), made)
        return _swap(holder, name, made[name])

    return undo


def _driver_without(name: str, fix: str, instead: str) -> Callable[[], Callable[[], None]]:
    """``Driver.<name>`` with its fix undone (:func:`_method_without`)."""
    return _method_without("lazily_queue.raft.driver", "Driver", name, fix, instead)


def _txn_check_ignores_due() -> Callable[[], None]:
    """A transaction's check counts no delayed elements as made ready by a push."""
    from lazily_queue.core.fifo_delayed import FifoDelayed

    return _swap(FifoDelayed, "due_len", lambda self, now: 0)


def _popped_record_not_in_snapshots() -> Callable[[], None]:
    """Snapshots carry no record of what client sessions popped: a member restarted from
    one, or that installed one, refuses the give-back of the pops before it."""
    from lazily_queue.replicated import session_popped_snapshot

    return _swap(session_popped_snapshot, "capture", lambda sm: None)


UNDO: dict[str, Callable[[], Callable[[], None]]] = {
    "durable-commit-index": _commit_index_ahead_of_fsync,
    "snapshot-checksum": _no_snapshot_checksum,
    "count-each-vote-once": _patch_off("count-each-vote-once"),
    "pre-vote": _patch_off("pre-vote"),
    # a leader sends a member the same snapshot again at once, as before its resends were
    # spaced (scenarios found before the spacing reach their bug only so)
    "snapshot-resends-paced": lambda: _swap(
        snapshot_resend.ResendPacer, "waits", lambda self, member, snapshot: False),
    "lowest-reset-next-index": _patch_off("lowest-reset-next-index"),
    "rejoin-floor": _no_rejoin_floor,
    "journal-resync": _no_resync_after_bad_record,
    "snapshot-messages-commit-nothing": _patch_off("snapshot-messages-commit-nothing"),
    "no-stale-snapshot-install": _patch_off("no-stale-snapshot-install"),
    "rewrite-after-failed-fsync": _trust_failed_fsync,
    "hold-until-fsync": _release_before_fsync,
    "durable-leader-commit": _patch_off("durable-leader-commit"),
    "damaged-tail-floor": _damaged_tail_is_torn,
    "restore-returned-elements": _strict_queue_restore,
    "check-stored-snapshot": _stored_snapshot_unchecked,
    # A caller cancelled once its result was ready: the result is not given to on_orphan.
    "orphan-result-of-cancelled-call": _driver_without(
        "_abandon", r"if fut\.done\(\) and not fut\.cancelled\(\) and fut\.exception\(\) is "
        r"None:\n.*?\n[ ]*else:\n[ ]*self\.replica\.cancel\(proposal\)",
        "self.replica.cancel(proposal)"),
    # A completion meeting a cancelled caller: its result is not given to on_orphan.
    "orphan-completion-after-cancel": _driver_without(
        "propose", r"\n[ ]*if fut\.cancelled\(\) and error is None and on_orphan is not "
        r"None:\n(?:[ ]*#[^\n]*\n)*[ ]*on_orphan\(result\)", ""),
    "txn-counts-due-delayed": _txn_check_ignores_due,
    "popped-record-in-snapshots": _popped_record_not_in_snapshots,
    # A client session's pop taking two copies of one id (a producer gave it back twice)
    # takes the first off its record before noting it: a KeyError fails the entry.
    "pop-holding-an-id-twice": _method_without(
        "lazily_queue.replicated.session_popped", "SessionPopped", "_popped",
        r"held = index\.get\(key\)\n[ ]*if held == seq:[^\n]*\n[ ]*position \+= 1\n"
        r"[ ]*continue\n[ ]*if held is not None:", "if key in index:"),
    # A snapshot's pop holding an id twice restores it as its last copy, where the log
    # noted its first: a member's gate reads another value than its peers'.
    "popped-snapshot-first-copy": _method_without(
        "lazily_queue.replicated.session_popped_snapshot", None, "_pop",
        r"positions: dict\[int, int\] = \{\}\n[ ]*for n, \(i, _, _\) in "
        r"enumerate\(found\):[^\n]*\n[ ]*positions\.setdefault\(i, n\)",
        "positions = {i: n for n, (i, _, _) in enumerate(found)}"),
}


@contextmanager
def without(*names: str) -> Iterator[None]:
    """Run the block with the named fixes undone."""
    restores: list[Callable[[], Any]] = []
    try:
        for name in names:
            if name not in UNDO:
                raise KeyError(f"unknown fix {name!r}; known: {sorted(UNDO)}")
            restores.append(UNDO[name]())
        yield
    finally:
        for restore in reversed(restores):
            restore()
