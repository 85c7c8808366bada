"""The engine must fail, with a clear message, on wrong fixtures and on broken cells."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from lazily_queue import QueueCell
from lazily_queue.conformance import (
    Fixture,
    Mismatch,
    QueueAdapter,
    QueueInitial,
    UnknownBackend,
    create_backend,
    replay,
)
from lazily_queue.conformance.local import (
    GenericDequeStorage,
    Invoker,
    LocalBackend,
    LocalQueueAdapter,
)
from lazily_queue.core.queue import LEN, QueuePushError
from lazily_queue.reactive import Context, Slot, computed

ROOT = Path(__file__).resolve().parents[2]
COLLECTIONS = ROOT / "fixtures" / "collections"


def load(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((COLLECTIONS / f"{name}.json").read_text())
    return doc


def base_queue() -> dict[str, Any]:
    return {
        "description": "two pushes and a pop",
        "kind": "Collection",
        "model": "QueueCell",
        "initial": {"elements": [], "capacity": None, "closed": False},
        "steps": [
            {
                "op": {"type": "push", "value": "a"},
                "expected": {
                    "len": 1,
                    "invalidates": {"head": True, "len": True, "is_empty": True},
                },
            },
            {
                "op": {"type": "push", "value": "b"},
                "expected": {"len": 2, "invalidates": {"head": False, "len": True}},
            },
            {
                "op": {"type": "pop"},
                "returns": "a",
                "expected": {"head": "b", "invalidates": {"head": True, "len": True}},
            },
        ],
    }


async def failure_of(
    document: dict[str, Any], backend: Any = "local", flavor: str = "sync"
) -> Mismatch:
    fixture = Fixture.from_document(document, "negative")
    result = await replay(fixture, backend=backend, flavor=flavor)
    assert result.failure is not None, "the engine accepted a fixture it must reject"
    assert not result.passed
    return result.failure


async def test_the_base_document_passes() -> None:
    for flavor in ("sync", "async", "threadsafe"):
        result = await replay(Fixture.from_document(base_queue()), flavor=flavor)
        assert result.passed, result.failure
        assert result.steps_passed == 3


@pytest.mark.parametrize("flavor", ["sync", "async", "threadsafe"])
async def test_wrong_state_expectation(flavor: str) -> None:
    doc = base_queue()
    doc["steps"][1]["expected"]["len"] = 3
    failure = await failure_of(doc, flavor=flavor)
    assert (failure.step, failure.key, failure.expected, failure.actual) == (1, "len", 3, 2)
    assert failure.describe() == "step 1: len: expected 3, got 2"


async def test_wrong_return() -> None:
    doc = base_queue()
    doc["steps"][2]["returns"] = "b"
    failure = await failure_of(doc)
    assert (failure.step, failure.key) == (2, "returns")
    assert 'expected "b", got "a"' in failure.describe()


async def test_bool_is_not_int() -> None:
    doc = base_queue()
    doc["steps"][0]["expected"]["len"] = True
    failure = await failure_of(doc)
    assert (failure.step, failure.key) == (0, "len")


async def test_wrong_invalidates_true_expected() -> None:
    doc = base_queue()
    doc["steps"][1]["expected"]["invalidates"]["is_full"] = True
    failure = await failure_of(doc)
    assert (failure.step, failure.key) == (1, "invalidates.is_full")
    assert "expected true, got false" in failure.message


async def test_wrong_invalidates_false_expected() -> None:
    doc = base_queue()
    doc["steps"][2]["expected"]["invalidates"]["head"] = False
    failure = await failure_of(doc)
    assert (failure.step, failure.key) == (2, "invalidates.head")
    assert "expected false, got true" in failure.message


async def test_empty_matrix_asserts_every_reader_false() -> None:
    doc = base_queue()
    doc["steps"][1]["expected"]["invalidates"] = {}
    failure = await failure_of(doc)
    assert (failure.step, failure.key) == (1, "invalidates.len")


async def test_unknown_op() -> None:
    doc = base_queue()
    doc["steps"][1]["op"] = {"type": "frobnicate"}
    failure = await failure_of(doc)
    assert failure.step == 1
    assert "unknown op type 'frobnicate' for QueueCell" in failure.message


async def test_unknown_op_field() -> None:
    doc = base_queue()
    doc["steps"][0]["op"]["priority"] = 3
    failure = await failure_of(doc)
    assert failure.step == 0 and "unknown field(s) ['priority']" in failure.message


async def test_unknown_expected_key() -> None:
    doc = base_queue()
    doc["steps"][0]["expected"]["size"] = 1
    failure = await failure_of(doc)
    assert failure.step == 0 and "unknown expected key(s) ['size']" in failure.message


async def test_unknown_top_level_key_and_model() -> None:
    doc = base_queue()
    doc["assertions"] = {}
    assert "unknown top-level key(s) ['assertions']" in (await failure_of(doc)).message
    doc = base_queue()
    doc["model"] = "StackCell"
    failure = await failure_of(doc)
    assert failure.step is None and "unknown model 'StackCell'" in failure.message


async def test_unwatched_reader_in_matrix() -> None:
    doc = base_queue()
    doc["steps"][0]["expected"]["invalidates"]["size"] = True
    failure = await failure_of(doc)
    assert failure.key == "invalidates.size"
    assert "does not watch" in failure.message


async def test_invalidates_is_mandatory_and_never_at_step_level() -> None:
    doc = base_queue()
    del doc["steps"][0]["expected"]["invalidates"]
    failure = await failure_of(doc)
    assert failure.key == "expected.invalidates"
    doc = base_queue()
    doc["steps"][0]["invalidates"] = doc["steps"][0]["expected"].pop("invalidates")
    failure = await failure_of(doc)
    assert "inside 'expected'" in failure.message


async def test_push_must_succeed() -> None:
    doc = base_queue()
    doc["initial"]["capacity"] = 1
    failure = await failure_of(doc)
    assert failure.step == 1 and "refused with Full" in failure.message


async def test_capacity_below_one_rejected() -> None:
    doc = base_queue()
    doc["initial"]["capacity"] = 0
    failure = await failure_of(doc)
    assert failure.step is None and failure.key == "initial.capacity"


async def test_work_queue_rejects_seeded_initial_and_missing_returns() -> None:
    doc = load("workqueue_requeue_at_tail")
    seeded = copy.deepcopy(doc)
    seeded["initial"]["pending"] = [{"item_id": 0, "value": "a", "attempts": 0}]
    failure = await failure_of(seeded)
    assert failure.key == "initial.pending" and "must be an empty list" in failure.message
    missing = copy.deepcopy(doc)
    del missing["steps"][0]["returns"]
    failure = await failure_of(missing)
    assert failure.step == 0 and failure.key == "returns"


async def test_work_queue_delivery_key_set() -> None:
    doc = load("workqueue_requeue_at_tail")
    index = next(
        i for i, s in enumerate(doc["steps"]) if s["op"]["type"] == "claim" and s["returns"]
    )
    doc["steps"][index]["returns"]["lease"] = 1
    failure = await failure_of(doc)
    assert failure.step == index and failure.key == "returns"
    assert "expected keys missing from the actual value ['lease']" in failure.message


async def test_topic_reads_must_name_exactly_the_connected() -> None:
    doc = load("topiccell_late_subscriber_at_tail")
    step = next(s for s in doc["steps"] if s["expected"]["reads"])
    first = next(iter(step["expected"]["reads"]))
    del step["expected"]["reads"][first]
    failure = await failure_of(doc)
    assert failure.key == "reads"
    assert f"actual keys the fixture does not expect ['{first}']" in failure.message


@pytest.mark.parametrize("name", ["", "topiccell_late_subscriber_at_tail"])
@pytest.mark.parametrize("seconds", [-1, True, "1"])
async def test_advance_clock_takes_a_number_of_seconds_at_least_zero(
    name: str, seconds: Any,
) -> None:
    doc = load(name) if name else base_queue()
    doc["steps"][0]["op"] = {"type": "advance_clock", "seconds": seconds}
    doc["steps"][0].pop("returns", None)
    failure = await failure_of(doc)
    assert (failure.step, failure.key) == (0, "op.advance_clock")
    assert f"seconds must be a number >= 0, got {seconds!r}" in failure.message


async def test_unknown_backend_lists_known_ones() -> None:
    with pytest.raises(UnknownBackend, match=r"known backends: .*local"):
        create_backend("raft9")


# -- broken cells and adapters --------------------------------------------------------


class DropsLenInvalidation(QueueCell[Any]):
    """Forgets to clear ``len``: values stay right on a fresh read, observers miss it."""

    def _invalidate(self, mask: int) -> None:
        super()._invalidate(mask & ~LEN)


class TornInvalidation(QueueCell[Any]):
    """Clears each reader kind in its own frontier walk instead of one."""

    def _invalidate(self, mask: int) -> None:
        bit = 1
        while bit <= mask:
            if mask & bit:
                super()._invalidate(bit)
            bit <<= 1


class PolledLenAdapter(LocalQueueAdapter):
    """``len`` is a computed over nothing reactive: no dependency edge (E10)."""

    def readers(self) -> Mapping[str, Slot[Any]]:
        readers = dict(self.cell.readers())
        storage = self.cell.storage
        readers["len"] = computed(storage.len, context=self.cell.ctx)  # type: ignore[assignment]
        return readers


class UnbatchedAdapter(LocalQueueAdapter):
    """Runs a fixture batch as separate pushes (no ``batch()``)."""

    async def push_batch(self, values: list[Any]) -> list[QueuePushError | None]:
        return [self.cell.try_push(v) for v in values]


class BrokenBackend(LocalBackend):
    def __init__(self, cell_type: type[QueueCell[Any]], adapter: type[LocalQueueAdapter]) -> None:
        super().__init__()
        self.name = f"broken-{cell_type.__name__}"
        self._cell_type = cell_type
        self._adapter_type = adapter

    async def queue(self, initial: QueueInitial, flavor: str) -> QueueAdapter:
        storage: GenericDequeStorage[Any] = GenericDequeStorage(initial.capacity)
        cell = self._cell_type(storage, context=Context(name="broken"))
        return self._adapter_type(cell, Invoker(flavor))


async def test_missing_invalidation_is_caught() -> None:
    backend = BrokenBackend(DropsLenInvalidation, LocalQueueAdapter)
    failure = await failure_of(base_queue(), backend=backend)
    assert (failure.step, failure.key) == (0, "invalidates.len")
    assert "missing invalidation or dependency edge" in failure.message


async def test_reader_without_dependency_edge_is_caught() -> None:
    backend = BrokenBackend(QueueCell, PolledLenAdapter)
    failure = await failure_of(base_queue(), backend=backend)
    assert failure.step is None and failure.key == "reader len"
    assert "no dependency edge" in failure.message


async def test_torn_transition_is_caught() -> None:
    backend = BrokenBackend(TornInvalidation, LocalQueueAdapter)
    failure = await failure_of(base_queue(), backend=backend)
    assert failure.step == 0 and "torn transition" in failure.message


async def test_uncoalesced_batch_is_caught() -> None:
    doc = load("queuecell_batch_coalesced_from_empty")
    backend = BrokenBackend(QueueCell, UnbatchedAdapter)
    failure = await failure_of(doc, backend=backend)
    assert failure.step == 0 and "one coalesced invalidation" in failure.message


async def test_every_project_fixture_fails_on_a_cell_that_drops_len() -> None:
    backend = BrokenBackend(DropsLenInvalidation, LocalQueueAdapter)
    for path in sorted(COLLECTIONS.glob("queuecell_*.json")):
        doc = json.loads(path.read_text())
        pushes = [s for s in doc["steps"] if s["op"]["type"] in ("push", "batch", "pop")]
        if not pushes:
            continue
        result = await replay(Fixture.from_document(doc, path.stem), backend=backend)
        assert not result.passed, f"{path.stem} did not notice a missing len invalidation"


class RaisingReaderAdapter(LocalQueueAdapter):
    """A reader that works at setup and then breaks: reported, not raised."""

    def elements(self) -> list[Any]:
        raise RuntimeError("storage snapshot unavailable")


async def test_errors_in_a_backend_are_reported_as_failures() -> None:
    doc = base_queue()
    doc["steps"][0]["expected"]["elements"] = ["a"]
    failure = await failure_of(doc, backend=BrokenBackend(QueueCell, RaisingReaderAdapter))
    assert failure.step == 0 and failure.key == "error"
    assert "RuntimeError: storage snapshot unavailable" in failure.message
