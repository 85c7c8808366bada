"""The replay loop: probes, per-step baselines, returns, invalidation matrix, state keys.

Per fixture: build the model from ``initial`` through the backend adapter, mint one
probe (an :class:`~lazily_queue.reactive.Effect` counting its reruns) per watched
reader, then for every step: re-baseline every probe, perform the op, compare
``returns``, assert ``invalidates`` in both directions and check the state keys.
The first mismatch ends the replay and is reported in the :class:`ReplayResult`.
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from .backend import Adapter, Backend, UnsupportedFixtureOp, create_backend
from .compare import ConformanceFailure, Mismatch, check, fail
from .fixture import KIND, MODELS, TOP_LEVEL_KEYS, Fixture
from .probes import ProbeSet

STEP_KEYS = frozenset({"op", "returns", "raises", "expected"})
"""``raises`` (an extension for distributed fixtures) names the error the op must raise,
e.g. ``"NoQuorum"``; the state keys are then checked as usual."""


@dataclass(frozen=True)
class OpSpec:
    """The fields an op type requires and the ones it may carry."""

    required: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()


@dataclass(frozen=True)
class ReplayResult:
    """The outcome of replaying one fixture on one backend and flavor."""

    fixture: str
    model: str
    backend: str
    flavor: str
    steps: int
    steps_passed: int
    failure: Mismatch | None
    seconds: float
    #: Why the fixture was not replayed (a capability the backend lacks), or ``None``.
    skipped: str | None = None

    @property
    def passed(self) -> bool:
        """No mismatch (a skipped replay is not a failure; see :attr:`skipped`)."""
        return self.failure is None


class ModelRunner(ABC):
    """Model-specific part of a replay: building, ops, watched readers, state keys."""

    model: ClassVar[str]
    ops: ClassVar[Mapping[str, OpSpec]]
    state_keys: ClassVar[frozenset[str]]
    returns_required: ClassVar[bool] = False

    def __init__(self, backend: Backend, flavor: str) -> None:
        self.backend = backend
        self.flavor = flavor
        self.probes: ProbeSet | None = None

    @property
    @abstractmethod
    def adapter(self) -> Adapter: ...

    @abstractmethod
    async def build(self, initial: Any, document: Mapping[str, Any]) -> None:
        """Validate ``initial`` (failing at setup) and create the model."""

    @abstractmethod
    def mint_probes(self) -> ProbeSet: ...

    @abstractmethod
    async def perform(self, step: int, op: Mapping[str, Any]) -> Any:
        """Run the op and return its JSON-shaped result."""

    @abstractmethod
    def state(self, step: int, key: str) -> Any:
        """The actual JSON-shaped value of the state key ``key`` after the op."""

    def check_state(self, step: int, expected: Mapping[str, Any]) -> None:
        for key, want in expected.items():
            if key != "invalidates":
                check(step, key, want, self.state(step, key))

    def coalesced(self, op: Mapping[str, Any]) -> bool:
        """True when the op must yield at most one rerun per probe."""
        return False

    def advance_clock(self, step: int, op: Mapping[str, Any]) -> None:
        """The op ``advance_clock``: the replay's time moves ``seconds`` (>= 0) on."""
        seconds = op["seconds"]
        if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or seconds < 0:
            fail(step, "op.advance_clock", f"seconds must be a number >= 0, got {seconds!r}")
        self.backend.advance_clock(seconds)

    def validate_op(self, step: int, op: Any) -> str:
        if not isinstance(op, dict) or not isinstance(op.get("type"), str):
            fail(step, "op", f"op must be an object with a string 'type', got {op!r}")
        kind: str = op["type"]
        spec = self.ops.get(kind)
        if spec is None:
            return kind  # maybe a cluster op; the backend decides
        fields = set(op) - {"type"}
        missing = [f for f in spec.required if f not in op]
        unknown = sorted(fields - set(spec.required) - set(spec.optional))
        if missing:
            fail(step, f"op.{kind}", f"missing field(s) {missing}")
        if unknown:
            fail(step, f"op.{kind}", f"unknown field(s) {unknown} for {self.model} op {kind!r}")
        return kind

    def validate_expected(self, step: int, expected: Any) -> None:
        if not isinstance(expected, dict):
            fail(step, "expected", f"expected must be an object, got {expected!r}")
        if not isinstance(expected.get("invalidates"), dict):
            fail(step, "expected.invalidates", "every step needs an 'invalidates' object")
        unknown = sorted(set(expected) - self.state_keys - {"invalidates"})
        if unknown:
            fail(step, "expected", f"unknown expected key(s) {unknown} for {self.model}")
        assert self.probes is not None
        watched = sorted(self.probes.readers)
        for name, value in expected["invalidates"].items():
            if name not in watched:
                fail(
                    step,
                    f"invalidates.{name}",
                    f"names a reader the runner does not watch (watched: {watched})",
                )
            if not isinstance(value, bool):
                fail(step, f"invalidates.{name}", f"must be true or false, got {value!r}")


RUNNERS: dict[str, type[ModelRunner]] = {}


def register_runner(cls: type[ModelRunner]) -> type[ModelRunner]:
    RUNNERS[cls.model] = cls
    return cls


def cluster_ops_of(fixture: Fixture) -> frozenset[str]:
    """The op types of ``fixture`` its model does not know: cluster ops (``kill_leader``,
    ``partition``, ...) that only a backend with those :attr:`Backend.cluster_ops` runs."""
    runner = RUNNERS.get(str(fixture.document.get("model")))
    if runner is None:
        return frozenset()
    kinds = {step["op"]["type"] for step in fixture.steps
             if isinstance(step, dict) and isinstance(step.get("op"), dict)
             and isinstance(step["op"].get("type"), str)}
    return frozenset(kinds - set(runner.ops))


def requirements(document: Mapping[str, Any]) -> set[str]:
    """The capabilities (keys of :data:`~.backend.CAPABILITIES`) a fixture needs besides
    its cluster ops (:func:`cluster_ops_of`)."""
    needed: set[str] = set()
    model = document.get("model")
    if model == "WorkQueueCell":
        from .work_queue import work_queue_needs

        needed |= work_queue_needs(document)
    initial = document.get("initial")
    if isinstance(initial, dict) and ("ttl" in initial or "max_age" in initial):
        needed.add("expiry")
    if isinstance(initial, dict) and "limits" in initial:
        needed.add("limits")
    for step in document.get("steps") or []:
        op = step.get("op") if isinstance(step, dict) else None
        kind = op.get("type") if isinstance(op, dict) else None
        if kind == "advance_clock" or (isinstance(op, dict) and "ttl" in op):
            needed.add("expiry")
        if model == "QueueCell" and isinstance(op, dict) and (
                "delay" in op or len({"msg_id", "ttl", "headers"} & set(op)) > 1):
            needed |= {"queue_options", "expiry"}  # delays run on the replay's clock
        if model == "QueueCell" and kind == "batch":
            needed.add("atomic_batch")
        if kind == "transaction":
            needed.add("transactions")
            inner = op.get("ops") if isinstance(op, dict) else None
            if isinstance(inner, list) and any(isinstance(o, dict) and "msg_id" in o
                                               for o in inner):
                needed.add("dedup")
        if isinstance(op, dict) and "msg_id" in op:
            needed.add("dedup")
        if model == "QueueCell" and kind == "poll_messages":
            needed.add("messages")
        if isinstance(op, dict) and ("headers" in op or kind == "read_messages"):
            needed.add("headers")
        if model == "TopicCell" and isinstance(kind, str):
            if kind == "seek" or (kind == "subscribe" and "start" in op):  # type: ignore[operator]
                needed.add("replay")
            if kind == "seek_time" or (kind == "subscribe"
                                       and "start_time" in op):  # type: ignore[operator]
                needed.add("replay_time")
            if kind.startswith("group"):
                needed.add("groups")
            if kind == "delete_subscriber":
                needed.add("subscriber_delete")
    return needed


def skip_reason(backend: Backend, document: Mapping[str, Any]) -> str | None:
    """Why ``backend`` cannot replay the fixture, or ``None`` when it can."""
    missing = sorted(requirements(document) & set(backend.lacks))
    if not missing:
        return None
    return "; ".join(f"lacks {name}: {backend.lacks[name]}" for name in missing)


def _validate_envelope(document: Mapping[str, Any]) -> None:
    unknown = sorted(set(document) - TOP_LEVEL_KEYS)
    if unknown:
        fail(None, "fixture", f"unknown top-level key(s) {unknown}")
    if document.get("kind") != KIND:
        fail(None, "kind", f'must be "{KIND}", got {document.get("kind")!r}')
    if document.get("model") not in MODELS:
        fail(None, "model", f"unknown model {document.get('model')!r}; known: {list(MODELS)}")
    steps = document.get("steps")
    if not isinstance(steps, list) or not steps:
        fail(None, "steps", "must be a non-empty array")
    if "initial" not in document:
        fail(None, "initial", "missing")


async def _run_step(runner: ModelRunner, index: int, step: Any) -> None:
    if not isinstance(step, dict):
        fail(index, "step", f"must be an object, got {step!r}")
    if "invalidates" in step:
        fail(index, "invalidates", "belongs inside 'expected', not at step level")
    unknown = sorted(set(step) - STEP_KEYS)
    if unknown:
        fail(index, "step", f"unknown step key(s) {unknown}")
    kind = runner.validate_op(index, step.get("op"))
    runner.validate_expected(index, step.get("expected"))
    if runner.returns_required and "returns" not in step and "raises" not in step:
        fail(index, "returns", f"every {runner.model} step must carry 'returns'")
    assert runner.probes is not None
    runner.probes.baseline()
    op: dict[str, Any] = step["op"]
    raises = step.get("raises")
    if raises is not None and (not isinstance(raises, str) or "returns" in step):
        fail(index, "raises", "must be an error name, and excludes 'returns'")
    try:
        if kind in runner.ops:
            result = await runner.perform(index, op)
        else:
            try:
                await runner.backend.cluster_op(op)
            except UnsupportedFixtureOp as exc:
                fail(index, f"op.{kind}", f"unknown op type {kind!r} for {runner.model} ({exc})")
            result = None
    except ConformanceFailure:
        raise
    except Exception as exc:
        names = {cls.__name__ for cls in type(exc).__mro__}
        if raises is None or raises not in names:
            fail(index, f"op.{kind}", f"raised {type(exc).__name__}: {exc}")
        result = None
    else:
        if raises is not None:
            fail(index, "raises", f"expected the op to raise {raises}; it returned {result!r}")
    await runner.adapter.settle()
    if "returns" in step:
        check(index, "returns", step["returns"], result)
    expected = step["expected"]
    runner.probes.assert_invalidates(
        index, expected["invalidates"], coalesced=runner.coalesced(op)
    )
    runner.check_state(index, expected)


async def replay(
    fixture: Fixture, *, backend: str | Backend = "local", flavor: str = "sync"
) -> ReplayResult:
    """Replay ``fixture`` and report the first mismatch (never raises for a mismatch)."""
    started = time.perf_counter()
    document = fixture.document
    engine = create_backend(backend) if isinstance(backend, str) else backend
    model = str(document.get("model"))
    steps = fixture.steps
    passed = 0
    current: int | None = None
    failure: Mismatch | None = None
    reason = skip_reason(engine, document)
    if reason is not None:
        return ReplayResult(fixture=fixture.name, model=model, backend=engine.name,
                            flavor=flavor, steps=len(steps), steps_passed=0, failure=None,
                            seconds=0.0, skipped=reason)
    try:
        if flavor not in engine.flavors:
            fail(None, "flavor", f"backend {engine.name!r} has no {flavor!r} flavor "
                 f"(it has {list(engine.flavors)})")
        _validate_envelope(document)
        async with engine:
            runner = RUNNERS[model](engine, flavor)
            await runner.build(document["initial"], document)
            try:
                runner.probes = runner.mint_probes()
                for current, step in enumerate(steps):
                    await _run_step(runner, current, step)
                    passed += 1
                current = None
            finally:
                if runner.probes is not None:
                    runner.probes.dispose()
                await runner.adapter.dispose()
    except ConformanceFailure as exc:
        failure = exc.mismatch
    except Exception as exc:  # a broken backend or reader: report it, do not crash the run
        where = "setup or teardown" if current is None else "checking the step"
        message = f"{where} raised {type(exc).__name__}: {exc}"
        failure = Mismatch(current, "error", None, None, message)
    return ReplayResult(
        fixture=fixture.name,
        model=model,
        backend=engine.name,
        flavor=flavor,
        steps=len(steps),
        steps_passed=passed,
        failure=failure,
        seconds=time.perf_counter() - started,
    )


def replay_sync(
    fixture: Fixture, *, backend: str | Backend = "local", flavor: str = "sync"
) -> ReplayResult:
    """:func:`replay` on a fresh event loop (for callers without one)."""
    return asyncio.run(replay(fixture, backend=backend, flavor=flavor))
