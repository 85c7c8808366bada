"""The cluster demo's ledger: the application database next to the queue.

One SQLite file (WAL mode) shared by every node process and read by the demo
driver. Producers record each push before and after it is acknowledged; workers
apply each job's *effect* here, idempotently by item id: within one transaction a
worker checks ``effects`` for the item, and only when it is absent records the effect
(``effects``) and appends an audit row (``applied``). Every delivery a worker receives
is logged in ``deliveries`` with its outcome: ``applied``, ``skipped`` (a redelivery
of an item whose effect was already applied) or ``failed`` (an injected failure: the
job is nacked and retried).

A committed SQLite transaction survives SIGKILL of the process that made it, so the
ledger is the ground truth the demo verifies against.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS pushes (
    item TEXT PRIMARY KEY, producer INTEGER NOT NULL, seq INTEGER NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('attempt', 'acked', 'unknown')),
    attempted REAL NOT NULL, at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS effects (item TEXT PRIMARY KEY, worker TEXT NOT NULL, at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS applied (item TEXT NOT NULL, worker TEXT NOT NULL, at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS deliveries (
    item TEXT NOT NULL, worker TEXT NOT NULL, attempt INTEGER NOT NULL,
    outcome TEXT NOT NULL, at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS producers (producer INTEGER PRIMARY KEY, done INTEGER NOT NULL);
"""


def item_id(producer: int, seq: int) -> str:
    return f"{producer}-{seq:06d}"


@dataclass(frozen=True)
class Tally:
    """Counts read from the ledger (see :meth:`Ledger.tally`)."""

    pushed: int
    unconfirmed: int
    unconfirmed_arrived: int
    processed: int
    lost: int
    duplicates: int
    deliveries: int
    redeliveries: int
    skipped: int
    failed: int
    producers_done: int
    unknown_items: int
    first_ack_after: float | None = None
    """When the first push attempted after ``since`` was acknowledged."""


class Ledger:
    """One connection to the ledger file; not thread-safe (use one per thread)."""

    def __init__(self, path: str | Path, *, create: bool = False) -> None:
        self.path = Path(path)
        self.db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None,
                                  check_same_thread=False)
        self.db.execute("PRAGMA busy_timeout = 30000")
        if create:
            self.db.execute("PRAGMA journal_mode = WAL")
            self.db.executescript(SCHEMA)
        self.db.execute("PRAGMA synchronous = NORMAL")

    def close(self) -> None:
        self.db.close()

    # -- producers ------------------------------------------------------------------------

    def next_seq(self, producer: int) -> int:
        """Where a (re)started producer continues: after every push it ever attempted."""
        row = self.db.execute("SELECT MAX(seq) FROM pushes WHERE producer = ?",
                              (producer,)).fetchone()
        return 0 if row[0] is None else int(row[0]) + 1

    def push_attempt(self, producer: int, seq: int) -> None:
        now = time.time()
        self.db.execute("INSERT INTO pushes VALUES (?, ?, ?, 'attempt', ?, ?)",
                        (item_id(producer, seq), producer, seq, now, now))

    def push_outcome(self, producer: int, seq: int, state: str) -> None:
        self.db.execute("UPDATE pushes SET state = ?, at = ? WHERE item = ?",
                        (state, time.time(), item_id(producer, seq)))

    def producer_done(self, producer: int) -> None:
        self.db.execute("INSERT OR REPLACE INTO producers VALUES (?, 1)", (producer,))

    # -- workers --------------------------------------------------------------------------

    def apply(self, item: str, worker: str, attempt: int) -> bool:
        """Apply ``item``'s effect unless already applied; True when applied now."""
        now = time.time()
        with self._transaction():
            seen = self.db.execute("SELECT 1 FROM effects WHERE item = ?", (item,)).fetchone()
            if seen is None:
                self.db.execute("INSERT INTO effects VALUES (?, ?, ?)", (item, worker, now))
                self.db.execute("INSERT INTO applied VALUES (?, ?, ?)", (item, worker, now))
            outcome = "applied" if seen is None else "skipped"
            self.db.execute("INSERT INTO deliveries VALUES (?, ?, ?, ?, ?)",
                            (item, worker, attempt, outcome, now))
        return seen is None

    def record_failure(self, item: str, worker: str, attempt: int) -> None:
        self.db.execute("INSERT INTO deliveries VALUES (?, ?, ?, 'failed', ?)",
                        (item, worker, attempt, time.time()))

    def _transaction(self) -> _Transaction:
        return _Transaction(self.db)

    # -- verification -----------------------------------------------------------------------

    def tally(self, *, since: float | None = None) -> Tally:
        """Counts for the progress display and the verdict (see :class:`Tally`)."""
        q = self.db.execute

        def one(sql: str, *args: object) -> int:
            return int(q(sql, args).fetchone()[0] or 0)

        first = None
        if since is not None:
            row = q("SELECT MIN(at) FROM pushes WHERE state = 'acked' AND attempted > ?",
                    (since,)).fetchone()
            first = None if row[0] is None else float(row[0])
        return Tally(
            pushed=one("SELECT COUNT(*) FROM pushes WHERE state = 'acked'"),
            unconfirmed=one("SELECT COUNT(*) FROM pushes WHERE state != 'acked'"),
            unconfirmed_arrived=one(
                "SELECT COUNT(*) FROM pushes p JOIN effects e ON e.item = p.item "
                "WHERE p.state != 'acked'"),
            processed=one("SELECT COUNT(*) FROM effects"),
            lost=one("SELECT COUNT(*) FROM pushes p WHERE p.state = 'acked' AND NOT EXISTS "
                     "(SELECT 1 FROM effects e WHERE e.item = p.item)"),
            duplicates=one("SELECT COALESCE(SUM(n - 1), 0) FROM "
                           "(SELECT COUNT(*) AS n FROM applied GROUP BY item HAVING n > 1)"),
            deliveries=one("SELECT COUNT(*) FROM deliveries"),
            redeliveries=one("SELECT COUNT(*) FROM deliveries WHERE attempt > 1"),
            skipped=one("SELECT COUNT(*) FROM deliveries WHERE outcome = 'skipped'"),
            failed=one("SELECT COUNT(*) FROM deliveries WHERE outcome = 'failed'"),
            producers_done=one("SELECT COUNT(*) FROM producers WHERE done = 1"),
            unknown_items=one("SELECT COUNT(*) FROM effects e WHERE NOT EXISTS "
                              "(SELECT 1 FROM pushes p WHERE p.item = e.item)"),
            first_ack_after=first,
        )


class _Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on error)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, *_: object) -> None:
        self.db.execute("ROLLBACK" if exc_type is not None else "COMMIT")
