"""A small replayer for TopicCell and WorkQueueCell collection fixtures (spec §5.3, §5.4).

It checks the upstream grammar strictly (so project fixtures stay valid upstream JSON)
and replays each step on the real cells: one counting ``Effect`` per reader is the
probe, re-baselined before every step; ``invalidates: {}`` asserts that no watched
reader invalidated; object-valued keys are compared with exact key sets and JSON types
(``false`` is not ``0``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

from lazily_queue import SettlementRejected, TopicCell, WorkQueueCell
from lazily_queue.reactive import Context, Effect

ROOT = Path(__file__).resolve().parent.parent


def _upstream() -> Path:
    """The upstream collection fixtures: under ``LAZILY_SPEC_FIXTURES`` when it is set
    (relative to the repository, as the suite's ``spec_fixtures``), else beside it."""
    value = os.environ.get("LAZILY_SPEC_FIXTURES")
    base = ROOT.parent / "shared" / "peer-fixtures" if not value else Path(value)
    return (base if base.is_absolute() else ROOT / base).resolve() / "collections"


UPSTREAM = _upstream()
PROJECT = ROOT / "fixtures" / "collections"

TOP_KEYS = {"description", "kind", "model", "initial", "steps"}
TOPIC_OPS: dict[str, set[str]] = {
    "publish": {"value"}, "subscribe": {"subscriber", "durability"},
    "reconnect": {"subscriber"}, "disconnect": {"subscriber"}, "advance": {"subscriber"},
    "gc": set(), "restart": {"subscriber"}, "delete_subscriber": {"subscriber"},
}
TOPIC_EXPECTED = {"base_offset", "elements", "subscriptions", "reads", "invalidates"}
WORK_OPS: dict[str, set[str]] = {
    "push": {"value"}, "claim": {"worker", "now"}, "ack": {"worker", "delivery_id"},
    "nack": {"worker", "delivery_id"}, "reap_expired": {"now"},
}
WORK_READERS = {"pending_len", "is_empty", "in_flight_len", "dead_letter_len"}
WORK_EXPECTED = {"pending", "in_flight", "dead_letters", "reads", "invalidates"}


def fixture_paths(prefix: str) -> list[Path]:
    """Upstream and project fixtures whose file name starts with ``prefix``."""
    found: list[Path] = []
    for directory in (UPSTREAM, PROJECT):
        if directory.is_dir():
            found.extend(sorted(directory.glob(f"{prefix}_*.json")))
    return found


def fixture_id(path: Path) -> str:
    return f"{'upstream' if path.parent == UPSTREAM else 'project'}/{path.stem}"


def same(expected: Any, actual: Any, where: str) -> None:
    """JSON-exact equality: key sets both ways, bool distinct from int."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict), f"{where}: expected an object, got {actual!r}"
        assert set(expected) == set(actual), (
            f"{where}: key set {sorted(actual)} != expected {sorted(expected)}"
        )
        for key in expected:
            same(expected[key], actual[key], f"{where}.{key}")
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), (
            f"{where}: expected {expected!r}, got {actual!r}"
        )
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            same(e, a, f"{where}[{i}]")
    else:
        assert type(expected) is type(actual) and expected == actual, (
            f"{where}: expected {expected!r}, got {actual!r}"
        )


def _keys(where: str, data: Any, required: set[str], optional: Collection[str] = ()) -> None:
    assert isinstance(data, dict), f"{where}: not an object"
    assert required <= set(data) <= required | set(optional), (
        f"{where}: keys {sorted(data)}; required {sorted(required)}, optional {sorted(optional)}"
    )


def check_grammar(doc: dict[str, Any], model: str) -> None:
    """Assert the upstream envelope and step grammar of one fixture."""
    _keys("fixture", doc, TOP_KEYS, {"invariants"})
    assert doc["kind"] == "Collection" and doc["model"] == model
    assert isinstance(doc["description"], str) and doc["steps"]
    topic = model == "TopicCell"
    if topic:
        _keys("initial", doc["initial"], {"base_offset", "elements", "subscriptions"})
    else:
        _keys("initial", doc["initial"], {"visibility_timeout", "max_deliveries", "pending",
                                          "in_flight", "dead_letters"})
        assert doc["initial"]["pending"] == doc["initial"]["in_flight"] == []
        assert doc["initial"]["dead_letters"] == []
    ops = TOPIC_OPS if topic else WORK_OPS
    for n, step in enumerate(doc["steps"]):
        where = f"steps[{n}]"
        op = step["op"]
        assert op["type"] in ops, f"{where}: unknown op {op['type']!r}"
        _keys(f"{where}.op", op, {"type"} | ops[op["type"]])
        if topic:
            _keys(where, step, {"op", "expected"}, {"returns"})
            assert "returns" not in step or op["type"] in ("advance", "gc",
                                                                "delete_subscriber"), where
            _keys(f"{where}.expected", step["expected"], TOPIC_EXPECTED)
            subs = step["expected"]["subscriptions"]
            connected = {s for s, r in subs.items() if r["connected"]}
            assert set(step["expected"]["reads"]) == connected, f"{where}: reads != connected"
        else:
            _keys(where, step, {"op", "expected", "returns"})
            _keys(f"{where}.expected", step["expected"], WORK_EXPECTED)
            _keys(f"{where}.expected.reads", step["expected"]["reads"], WORK_READERS)
            _keys(f"{where}.expected.invalidates", step["expected"]["invalidates"], WORK_READERS)


class Probes:
    """One counting effect per reader; ``changed()`` reports which ran since ``baseline()``."""

    def __init__(self, readers: dict[str, Any], ctx: Context) -> None:
        self.effects = {name: Effect(_reading(reader), context=ctx, name=f"probe:{name}")
                        for name, reader in readers.items()}
        self.baseline()

    def baseline(self) -> None:
        self._runs = {name: e.runs for name, e in self.effects.items()}

    def changed(self) -> dict[str, bool]:
        return {name: e.runs != self._runs[name] for name, e in self.effects.items()}

    def dispose(self) -> None:
        for e in self.effects.values():
            e.dispose()


def _reading(reader: Any) -> Callable[[], None]:
    def probe() -> None:
        reader.get()

    return probe


def check_invalidates(expected: dict[str, bool], changed: dict[str, bool], where: str) -> None:
    unknown = set(expected) - set(changed)
    assert not unknown, f"{where}: invalidates names unwatched readers {sorted(unknown)}"
    if not expected:
        expected = dict.fromkeys(changed, False)
    actual = {name: changed[name] for name in expected}
    assert actual == expected, f"{where}: invalidated {actual}, expected {expected}"


def topic_ids(doc: dict[str, Any]) -> list[str]:
    ids = dict.fromkeys(doc["initial"]["subscriptions"])
    for step in doc["steps"]:
        if "subscriber" in step["op"]:
            ids[step["op"]["subscriber"]] = None
        for key in ("subscriptions", "invalidates", "reads"):
            ids.update(dict.fromkeys(step["expected"][key]))
    return list(ids)


def replay_topic(doc: dict[str, Any]) -> None:
    check_grammar(doc, "TopicCell")
    ctx = Context(name="topic-fixture")
    cell: TopicCell[Any] = TopicCell.from_snapshot(doc["initial"], context=ctx)
    ids = topic_ids(doc)
    probes = Probes({i: cell.reader(i) for i in ids}, ctx)
    for n, step in enumerate(doc["steps"]):
        where = f"steps[{n}] {step['op']['type']}"
        op = step["op"]
        probes.baseline()
        result: Any = None
        kind = op["type"]
        if kind == "restart":
            cell = TopicCell.from_snapshot(cell.snapshot(), context=ctx)
            probes.dispose()
            probes = Probes({i: cell.reader(i) for i in ids}, ctx)
        elif kind == "publish":
            result = cell.try_publish(op["value"])
        elif kind == "subscribe":
            result = cell.try_subscribe(op["subscriber"], op["durability"])
        elif kind == "gc":
            result = cell.try_gc()
        else:
            result = getattr(cell, f"try_{kind}")(op["subscriber"])
        if "returns" in step:
            same(step["returns"], result, f"{where} returns")
        exp = step["expected"]
        check_invalidates(exp["invalidates"], probes.changed(), where)
        same(exp["base_offset"], cell.base_offset(), f"{where} base_offset")
        same(exp["elements"], cell.elements(), f"{where} elements")
        same(exp["subscriptions"], cell.subscriptions(), f"{where} subscriptions")
        reads = {s: cell.read_stream(s) for s, r in cell.subscriptions().items() if r["connected"]}
        same(exp["reads"], reads, f"{where} reads")
        for s in ids:  # the reactive reader agrees with the untracked read
            assert cell.reader(s).get() == cell.read_stream(s), f"{where}: reader {s}"
    probes.dispose()


def settled(settle: Callable[[str, int], Any], op: dict[str, Any]) -> bool:
    """The spec's ack/nack answer: ``False`` for a refused settlement."""
    try:
        settle(op["worker"], op["delivery_id"])
    except SettlementRejected:
        return False
    return True


def replay_work(doc: dict[str, Any]) -> None:
    check_grammar(doc, "WorkQueueCell")
    ctx = Context(name="work-fixture")
    init = doc["initial"]
    cell = WorkQueueCell(visibility_timeout=init["visibility_timeout"],
                         max_deliveries=init["max_deliveries"], context=ctx)
    probes = Probes(cell.readers(), ctx)
    ops: dict[str, Callable[[dict[str, Any]], Any]] = {
        "push": lambda op: cell.try_push(op["value"]),
        "claim": lambda op: cell.try_claim(op["worker"], op["now"]),
        "ack": lambda op: settled(cell.try_ack, op),
        "nack": lambda op: settled(cell.try_nack, op),
        "reap_expired": lambda op: cell.try_reap_expired(op["now"]),
    }
    for n, step in enumerate(doc["steps"]):
        where = f"steps[{n}] {step['op']['type']}"
        probes.baseline()
        result = ops[step["op"]["type"]](step["op"])
        if result is not None and not isinstance(result, bool | int):
            result = result.to_dict()
        same(step["returns"], result, f"{where} returns")
        exp = step["expected"]
        check_invalidates(exp["invalidates"], probes.changed(), where)
        same(exp["pending"], [p.to_dict() for p in cell.pending()], f"{where} pending")
        same(exp["in_flight"], [d.to_dict() for d in cell.in_flight()], f"{where} in_flight")
        same(exp["dead_letters"], [d.to_dict() for d in cell.dead_letters()],
             f"{where} dead_letters")
        same(exp["reads"], {k: r.get() for k, r in cell.readers().items()}, f"{where} reads")
    probes.dispose()


def load(path: Path) -> dict[str, Any]:
    with path.open(encoding="utf-8") as fh:
        doc: dict[str, Any] = json.load(fh)
    return doc

