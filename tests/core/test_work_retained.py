"""RetainedPending: a work queue's pending deque led by a run of retained values (a
consumer group declared at its topic's head) acts as the deque of its items, making an
item only as it leaves the head."""

from __future__ import annotations

import copy
import pickle
import random
from collections import deque

import pytest

from lazily_queue.core.work_items import PendingItem
from lazily_queue.core.work_retained import RetainedPending, min_pending_id, pending_records


def _twin_fifos(n: int) -> tuple[RetainedPending, deque[PendingItem]]:
    values = [f"v{i}" for i in range(n)]
    return RetainedPending.of_run(list(values), 10), deque(
        PendingItem(10 + i, v, 0) for i, v in enumerate(values))


@pytest.mark.parametrize("seed", range(20))
def test_a_retained_run_acts_as_the_deque_of_its_items(seed: int) -> None:
    rng = random.Random(seed)
    lazy, plain = _twin_fifos(rng.randint(0, 6))
    for step in range(40):
        item = PendingItem(100 + step, f"x{step}", rng.randint(0, 2))
        ops = ["append", "appendleft", "extend", "popleft", "head", "copy", "add", "pickle",
               "clear", "records"]  # none of them makes the run's items
        if step >= 30:  # these turn the run into items first
            ops += ["pop", "rotate", "contains", "eq"]
        op = rng.choice(ops)
        if op in ("popleft", "head", "pop") and not plain:
            with pytest.raises(IndexError):
                getattr(lazy, op)() if op != "head" else lazy[0]
            continue
        if op == "append" or op == "appendleft":
            getattr(lazy, op)(item)
            getattr(plain, op)(item)
        elif op == "extend":
            lazy += [item]
            lazy.extend([item])
            plain.extend([item, item])
        elif op in ("popleft", "pop"):
            assert getattr(lazy, op)() == getattr(plain, op)()
        elif op == "head":
            assert lazy[0] == plain[0] and lazy[0] is lazy[0]
        elif op == "rotate":
            lazy.rotate(2)
            plain.rotate(2)
        elif op == "clear" and rng.random() < 0.3:
            lazy.clear()
            plain.clear()
        elif op == "copy":
            assert list(copy.copy(lazy)) == list(plain) == list(lazy.copy())
            assert list(copy.deepcopy(lazy)) == list(plain)
        elif op == "add":
            assert list(lazy + deque([item])) == [*plain, item]
        elif op == "pickle":
            assert list(pickle.loads(pickle.dumps(lazy))) == list(plain)
        elif op == "contains":
            assert (item in lazy) == (item in plain)
        elif op == "eq":
            assert lazy == plain
        elif op == "records":  # a snapshot's copy, its items made as they are read
            copied = pending_records(lazy)
            lazy.append(item)
            plain.append(item)
            assert len(copied) == len(plain) - 1 and list(copied) == list(plain)[:-1]
            assert [copied[i] for i in range(-len(copied), len(copied))] == 2 * list(copied)
            assert copied[1:3] == list(copied)[1:3] == list(plain)[:-1][1:3]
        assert len(lazy) == len(plain) and bool(lazy) == bool(plain)
        assert list(lazy) == list(plain)
        assert min_pending_id(lazy) == min_pending_id(plain)


def test_taking_from_a_retained_run_makes_only_the_items_taken() -> None:
    lazy = RetainedPending.of_run([f"v{i}" for i in range(100_000)], 0)
    lazy.append(PendingItem(100_000, "fed", 0))
    lazy.appendleft(PendingItem(7, "released", 1))
    assert [lazy.popleft(), lazy[0], lazy.popleft(), lazy.popleft()] == [
        PendingItem(7, "released", 1), PendingItem(0, "v0", 0), PendingItem(0, "v0", 0),
        PendingItem(1, "v1", 0)]
    assert len(lazy) == 99_999 and lazy.run_len() == 99_998 and min_pending_id(lazy) == 2


def test_the_expired_head_of_a_retained_run_leaves_at_once() -> None:
    lazy = RetainedPending.of_run(["a", "b", "c", "d"], 5)
    lazy.append(PendingItem(9, "fed", 0))
    assert lazy.run_at_head() == (5, 9)
    lazy.drop_run_head(2)
    assert lazy.run_at_head() == (7, 9) and list(lazy)[:2] == [PendingItem(7, "c", 0),
                                                               PendingItem(8, "d", 0)]
    lazy.appendleft(PendingItem(3, "released", 1))  # the run no longer leads
    assert lazy.run_at_head() is None
    assert lazy.popleft().item_id == 3
    lazy.drop_run_head(5)  # at most the whole run
    assert list(lazy) == [PendingItem(9, "fed", 0)] and lazy.run_at_head() is None
