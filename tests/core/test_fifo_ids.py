"""Message ids and enqueue stamps of the FIFO: assigned at push, kept across unpop."""

from __future__ import annotations

from typing import Any

import pytest

from lazily_queue.core import ids
from lazily_queue.core.fifo import Fifo
from lazily_queue.core.queue import QueuePopError


def _ids(fifo: Fifo[object]) -> list[tuple[int, int]]:
    return list(ids.expand(fifo.id_state()[1]))


def test_pushes_get_consecutive_ids_and_their_stamp() -> None:
    q: Fifo[str] = Fifo()
    q.push_stamped("a", 5)
    q.push_stamped("b", 5)
    q.push_stamped("c", 7)
    assert q.id_state() == (3, [[0, 2, 5], [2, 1, 7]])
    assert q.head_id() == (0, 5)
    assert q.pop_stamped(2) == (["a", "b"], [[0, 2, 5]])
    assert q.head_id() == (2, 7)


def test_one_stamp_is_one_run_however_many_pushes() -> None:
    q: Fifo[int] = Fifo()
    for i in range(1000):
        q.push_stamped(i, 42)
    assert q.id_state() == (1000, [[0, 1000, 42]])


def test_clock_stamps_plain_pushes_and_fast_path() -> None:
    now = [10]
    q: Fifo[str] = Fifo(clock=lambda: now[0])
    push, pop = q.reporting_ops(lambda mask: None)
    push("a")
    q.try_push("b")
    now[0] = 11
    push("c")
    assert _ids(q) == [(0, 10), (1, 10), (2, 11)]
    assert pop() == "a"
    assert q.try_pop() == "b"
    assert _ids(q) == [(2, 11)]


@pytest.mark.parametrize("capacity", [None, 8])
def test_unpop_stamped_gives_back_the_same_ids(capacity: int | None) -> None:
    q: Fifo[str] = Fifo(capacity)
    push, pop = q.reporting_ops(lambda mask: None)
    for v, stamp in (("a", 1), ("b", 1), ("c", 2), ("d", 3)):
        q.push_stamped(v, stamp)
    taken = q.pop_stamped(3)
    assert not isinstance(taken, QueuePopError)
    values, runs = taken
    assert pop() == "d"
    push("e")
    q.unpop_stamped(values[1:], ids.tail(runs, 2))
    assert q.elements() == ["b", "c", "e"]
    assert _ids(q) == [(1, 1), (2, 2), (4, 3)]
    assert q.id_state()[0] == 5
    assert pop() == "b" and q.head_id() == (2, 2)


def test_a_pop_answers_the_same_runs_as_a_restored_replica_would() -> None:
    """Ids given back just before the ones still in the queue, under the same stamp,
    come out as one run: a replica restored from a snapshot (whose runs are merged)
    answers the same pop with the same runs."""
    q: Fifo[str] = Fifo()
    for v in "abcdefg":
        q.push_stamped(v, 7)
    taken = q.pop_stamped(4)
    assert not isinstance(taken, QueuePopError)
    q.unpop_stamped(*taken)
    restored: Fifo[str] = Fifo.restored(None, q.elements(), False, q.id_state())
    assert q.pop_stamped(7) == restored.pop_stamped(7) == (list("abcdefg"), [[0, 7, 7]])


def test_unpop_stamped_refuses_runs_that_do_not_fit() -> None:
    q: Fifo[str] = Fifo()
    q.push_stamped("a", 1)
    with pytest.raises(ValueError, match="cover 2 elements"):
        q.unpop_stamped(["x"], [[0, 2, 1]])
    with pytest.raises(ValueError, match="never gave"):
        q.unpop_stamped(["x"], [[9, 1, 1]])
    with pytest.raises(ValueError, match="not a run"):
        q.unpop_stamped(["x"], [[0, 0, 1]])
    assert q.elements() == ["a"]


def test_push_front_without_ids_gets_a_fresh_id_never_reused() -> None:
    q: Fifo[str] = Fifo()
    q.push_stamped("a", 1)
    q.push_stamped("b", 1)
    q.push_front("z")
    q.push_stamped("c", 1)
    all_ids = [i for i, _ in _ids(q)]
    assert q.elements() == ["z", "a", "b", "c"]
    assert all_ids == [2, 0, 1, 3]


def test_clear_keeps_the_id_counter() -> None:
    q: Fifo[str] = Fifo()
    q.push_stamped("a", 1)
    q.clear()
    q.push_stamped("b", 1)
    assert q.id_state() == (2, [[1, 1, 1]])


def test_restored_keeps_ids_and_checks_them() -> None:
    q: Fifo[str] = Fifo()
    for v, stamp in (("a", 1), ("b", 2), ("c", 2)):
        q.push_stamped(v, stamp)
    q.try_pop()
    again = Fifo.restored(None, q.elements(), False, q.id_state())
    assert again.id_state() == q.id_state() == (3, [[1, 2, 2]])
    again.push_stamped("d", 2)
    assert _ids(again) == [(1, 2), (2, 2), (3, 2)]
    with pytest.raises(ValueError, match="cover"):
        Fifo.restored(None, ["a"], False, (3, [[0, 2, 1]]))
    with pytest.raises(ValueError, match="next id"):
        Fifo.restored(None, ["a"], False, (0, [[0, 1, 1]]))
    legacy = Fifo.restored(None, ["a", "b"], True, None)
    assert legacy.id_state() == (2, [[0, 2, 0]]) and legacy.is_closed()


def test_runs_helpers() -> None:
    runs = [[0, 3, 1], [5, 2, 2]]
    assert ids.tail(runs, 3) == [[2, 1, 1], [5, 2, 2]]
    assert ids.covered(runs) == 5
    assert list(ids.expand(runs)) == [(0, 1), (1, 1), (2, 1), (5, 2), (6, 2)]


@pytest.mark.parametrize("seed", range(20))
def test_random_operations_keep_ids_as_a_per_element_model_does(seed: int) -> None:
    """Ids (and, with a clock, stamps) against a record per element, through every way
    in and out: pushes stamped and plain, fast-path and generic pops, stamped pops and
    give-backs of their tails in any order, fresh-id give-backs, purges."""
    import random

    rng = random.Random(seed)
    clocked = bool(seed % 2)
    now = [0]
    q: Fifo[int] = Fifo(clock=lambda: now[0]) if clocked else Fifo(8 if seed % 4 else None)
    push, pop = q.reporting_ops(lambda mask: None)
    model: list[tuple[int, int]] = []  # (id, stamp) per element, FIFO order
    next_id = 0
    taken: list[tuple[list[int], list[ids.Run]]] = []

    def seen(pairs: list[tuple[int, int]]) -> list[Any]:
        return list(pairs) if clocked else [i for i, _ in pairs]

    for _ in range(300):
        kind = rng.randrange(7)
        if clocked and rng.random() < 0.3:
            now[0] += 1
        if kind == 0:
            stamp = rng.randrange(3)
            if q.push_stamped(next_id, stamp) is None:
                model.append((next_id, stamp))
                next_id += 1
        elif kind == 1:
            if push(next_id) is None:
                model.append((next_id, now[0]))
                next_id += 1
        elif kind == 2 and model:
            pop() if rng.random() < 0.5 else q.try_pop()
            model.pop(0)
        elif kind == 3 and model:
            got = q.pop_stamped(rng.randrange(1, 5))
            assert not isinstance(got, QueuePopError)
            values, runs = got
            assert seen(list(ids.expand(runs))) == seen(model[:len(values)])
            del model[:len(values)]
            taken.append((values, runs))
        elif kind == 4 and taken:
            values, runs = taken.pop(rng.randrange(len(taken)))
            k = rng.randrange(1, len(values) + 1)
            q.unpop_stamped(values[-k:], ids.tail(runs, k))
            model[:0] = list(ids.expand(ids.tail(runs, k)))
        elif kind == 5 and rng.random() < 0.2:
            q.push_front(-1)
            head = q.head_id()
            assert head is not None and head[0] == next_id
            model.insert(0, head)
            next_id += 1
        elif kind == 6 and rng.random() < 0.05:
            q.clear()
            model.clear()
        state = q.id_state()
        assert seen(list(ids.expand(state[1]))) == seen(model)
        assert state[0] == next_id and q.len() == len(model)
        assert len({i for i, _ in model}) == len(model)
