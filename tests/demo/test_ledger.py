"""The cluster demo's ledger: idempotent effects and the verdict's counts (real SQLite)."""

from __future__ import annotations

import threading
from pathlib import Path

from lazily_queue.demo.ledger import Ledger, item_id


def ledger(tmp_path: Path) -> Ledger:
    return Ledger(tmp_path / "ledger.sqlite", create=True)


def test_an_effect_is_applied_once_per_item(tmp_path: Path) -> None:
    db = ledger(tmp_path)
    db.push_attempt(1, 0)
    db.push_outcome(1, 0, "acked")
    assert db.apply(item_id(1, 0), "w1", 1) is True
    assert db.apply(item_id(1, 0), "w2", 2) is False  # a redelivery: skipped
    t = db.tally()
    assert (t.pushed, t.processed, t.lost, t.duplicates) == (1, 1, 0, 0)
    assert (t.deliveries, t.redeliveries, t.skipped) == (2, 1, 1)


def test_lost_unconfirmed_and_duplicate_effects_are_counted(tmp_path: Path) -> None:
    db = ledger(tmp_path)
    for seq in range(4):
        db.push_attempt(7, seq)
    for seq in (0, 1, 2):
        db.push_outcome(7, seq, "acked")
    db.apply(item_id(7, 0), "w", 1)
    db.apply(item_id(7, 3), "w", 1)  # the unconfirmed push arrived after all
    # a worker without the idempotency check would apply an effect again:
    db.db.execute("INSERT INTO applied VALUES (?, 'w9', 0)", (item_id(7, 0),))
    t = db.tally()
    assert t.pushed == 3 and t.unconfirmed == 1 and t.unconfirmed_arrived == 1
    assert t.lost == 2  # items 1 and 2 were acknowledged and never processed
    assert t.duplicates == 1
    assert db.next_seq(7) == 4 and db.next_seq(8) == 0


def test_concurrent_workers_apply_an_item_once(tmp_path: Path) -> None:
    ledger(tmp_path).close()
    results: list[bool] = []
    start = threading.Barrier(8)

    def worker(n: int) -> None:
        db = Ledger(tmp_path / "ledger.sqlite")
        start.wait()
        for seq in range(30):
            results.append(db.apply(item_id(1, seq), f"w{n}", 1))
        db.close()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results.count(True) == 30
    t = Ledger(tmp_path / "ledger.sqlite").tally()
    assert t.processed == 30 and t.duplicates == 0 and t.skipped == 30 * 7
