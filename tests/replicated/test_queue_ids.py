"""Message ids in the replicated queues: stamped pops and give-backs, snapshots, mirrors."""

from __future__ import annotations

from typing import Any

import pytest

from lazily_queue.core import ids
from lazily_queue.replicated import objects, ops
from lazily_queue.replicated.ops import OpError
from lazily_queue.replicated.state_machine import StateMachine

from .apply import apply_fresh as _apply


def _filled() -> StateMachine:
    sm = StateMachine()
    _apply(sm, [ops.QUEUE_DECLARE, "q", None], [ops.QUEUE_PUSH, "q", "a"],
           [ops.QUEUE_PUSH, "q", "b"], stamp=1_000)
    _apply(sm, [ops.QUEUE_PUSH, "q", "c"], stamp=2_000)
    return sm


def test_pushes_take_ids_and_the_batch_stamp_and_pops_answer_them() -> None:
    sm = _filled()
    assert _apply(sm, [ops.QUEUE_POP_STAMPED, "q", 2]) == [[["a", "b"], [[0, 2, 1_000]]]]
    assert _apply(sm, [ops.QUEUE_UNPOP_STAMPED, "q", ["b"], [[1, 1, 1_000]]]) == [None]
    assert _apply(sm, [ops.QUEUE_POP_STAMPED, "q", 5], stamp=3_000) == [
        [["b", "c"], [[1, 1, 1_000], [2, 1, 2_000]]]]
    assert _apply(sm, [ops.QUEUE_POP_STAMPED, "q", 1]) == [sm.queues["q"].try_pop()]


@pytest.mark.parametrize("args, code", [
    (["q", ["x"], [[0, 2, 1]]], "bad_runs"),
    (["q", ["x"], [[7, 1, 1]]], "bad_runs"),
    (["q", ["x"], "runs"], "bad_runs"),
    (["q", "x", []], "bad_values"),
])
def test_a_give_back_whose_ids_do_not_fit_is_refused_whole(args: list[Any], code: str) -> None:
    sm = _filled()
    [result] = _apply(sm, [ops.QUEUE_UNPOP_STAMPED, *args])
    assert isinstance(result, OpError) and result.code == code
    assert sm.queues["q"].elements() == ["a", "b", "c"]


@pytest.mark.parametrize("op, args, code, says", [
    (ops.QUEUE_UNPOP_STAMPED, ["q", ["b"], [[1, 1, 1]], []], "bad_values",
     "queue_unpop_stamped is [name, values, runs]"),
    (ops.QUEUE_UNPOP_HEADERS, ["q", ["b"], [[1, 1, 1]]], "bad_values",
     "queue_unpop_headers is [name, values, runs, headers]"),
    (ops.QUEUE_UNPOP_HEADERS, ["q", ["b"], [[1, 1, 1]], "h"], "bad_runs",
     "headers must be a list of [id, headers]"),
    (ops.QUEUE_UNPOP_HEADERS, ["q", ["b"], [[1, 1, 1]], [[0, {"h": "v"}]]], "bad_runs",
     "headers name id 0, not one given back"),
])
def test_a_give_back_of_the_wrong_shape_is_refused_naming_its_own(
        op: int, args: list[Any], code: str, says: str) -> None:
    sm = _filled()
    _apply(sm, [ops.QUEUE_POP_STAMPED, "q", 2])
    [result] = _apply(sm, [op, *args])
    assert isinstance(result, OpError) and result.code == code
    assert says in result.message
    assert sm.queues["q"].elements() == ["c"]


def test_a_give_back_with_runs_far_longer_than_its_values_is_refused_before_any_run_is_expanded(
        monkeypatch: pytest.MonkeyPatch) -> None:
    sm = _filled()
    expanded: list[int] = []
    real = ids.expand

    def counting(runs: list[ids.Run]) -> Any:
        expanded.append(ids.covered(runs))
        return real(runs) if ids.covered(runs) < 1_000 else iter(())

    monkeypatch.setattr(ids, "expand", counting)
    [result] = _apply(sm, [ops.QUEUE_UNPOP_HEADERS, "q", ["x"], [[0, 2**40, 0]],
                           [[0, {"h": "v"}]]])
    assert isinstance(result, OpError) and result.code == "bad_runs"
    assert "cover 1099511627776 elements, not the 1" in result.message
    assert all(count < 1_000 for count in expanded)
    assert sm.queues["q"].elements() == ["a", "b", "c"]


def test_snapshots_and_mirrors_keep_ids_and_an_old_snapshot_numbers_from_zero() -> None:
    sm = _filled()
    _apply(sm, [ops.QUEUE_POP, "q"])
    doc = sm.capture()
    assert doc["queue_ids"] == {"q": [3, [[1, 1, 1_000], [2, 1, 2_000]]]}
    again = StateMachine()
    again.restore(doc)
    assert again.queues["q"].id_state() == sm.queues["q"].id_state()
    mirror = StateMachine()
    objects.install(mirror, "queue", "q", objects.capture(sm, "queue", "q"))
    assert mirror.queues["q"].id_state() == sm.queues["q"].id_state()
    del doc["queue_ids"]
    legacy = StateMachine()
    legacy.restore(doc)
    assert legacy.queues["q"].id_state() == (2, [[0, 2, 0]])
    bad = sm.capture()
    bad["queue_ids"]["q"] = [3, [[0, 5, 1]]]
    with pytest.raises(ValueError, match="cover"):
        StateMachine().validate(bad)
