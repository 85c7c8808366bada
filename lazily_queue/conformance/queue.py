"""QueueCell fixtures: ``initial``, ops, returns and state keys (spec §5.2)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core.limits import Limits
from ..core.queue import EMPTY
from . import transactions
from .backend import QueueAdapter, QueueInitial, outcome_label
from .compare import fail, is_int, require_object
from .engine import ModelRunner, OpSpec, register_runner, requirements
from .probes import ProbeSet

READERS = ("head", "len", "is_empty", "is_full", "closed")
#: The readers of a queue declared with ``initial.limits``, besides :data:`READERS`.
LIMIT_READERS = ("bytes", "dropped")
INITIAL_KEYS = frozenset({"elements", "capacity", "closed", "ttl"})
LIMITS_KEYS = frozenset({"max_length", "max_bytes", "overflow"})
BATCH_OP_KEYS = frozenset({"type", "value", "producer"})
#: The options a push step may give; ``delay`` is seconds on the replay's clock.
PUSH_OPTIONS = ("msg_id", "ttl", "headers", "delay")


def limits_of_fixture(doc: Any) -> Limits:
    """An ``initial.limits`` object as :class:`Limits` (a setup failure when malformed)."""
    doc = require_object(doc, "initial.limits", LIMITS_KEYS)
    try:
        return Limits(doc["max_length"], doc["max_bytes"], doc["overflow"])
    except ValueError as exc:
        fail(None, "initial.limits", str(exc))
        raise


def _json_head(value: Any) -> Any:
    return None if value is EMPTY else value


@register_runner
class QueueRunner(ModelRunner):
    model = "QueueCell"
    ops = {
        "push": OpSpec(required=("value",), optional=PUSH_OPTIONS),
        "try_push": OpSpec(required=("value",), optional=PUSH_OPTIONS),
        "advance_clock": OpSpec(required=("seconds",)),
        "pop": OpSpec(),
        "try_pop": OpSpec(),
        "close": OpSpec(),
        "batch": OpSpec(required=("ops",)),
        "poll_messages": OpSpec(required=("n",), optional=("give_back",)),
        "transaction": transactions.TRANSACTION,
    }
    state_keys = frozenset(READERS) | frozenset(LIMIT_READERS) | {"elements", "expired",
                                                                  "delayed_len"}

    _adapter: QueueAdapter | None = None
    _capacity: int | None = None
    _limits: Limits | None = None

    @property
    def adapter(self) -> QueueAdapter:
        assert self._adapter is not None, "build() has not run"
        return self._adapter

    async def build(self, initial: Any, document: Mapping[str, Any]) -> None:
        ttl = initial.get("ttl") if isinstance(initial, dict) else None
        if isinstance(initial, dict):
            initial = {k: v for k, v in initial.items() if k != "ttl"}  # optional
        if ttl is not None and (not isinstance(ttl, (int, float)) or isinstance(ttl, bool)
                                or ttl <= 0):
            fail(None, "initial.ttl", f"must be null or a number of seconds > 0, got {ttl!r}")
        limits = None
        if isinstance(initial, dict) and "limits" in initial:
            initial = dict(initial)
            limits = limits_of_fixture(initial.pop("limits"))
        initial = require_object(initial, "initial", INITIAL_KEYS - {"ttl"})
        elements, capacity, closed = initial["elements"], initial["capacity"], initial["closed"]
        if limits is not None and capacity is not None:
            fail(None, "initial.capacity", "must be null when limits are given (max_length)")
        if not isinstance(elements, list):
            fail(None, "initial.elements", f"must be an array, got {elements!r}")
        if capacity is not None and (not is_int(capacity) or capacity < 1):
            fail(
                None,
                "initial.capacity",
                f"must be null or an int >= 1 (capacity < 1 is rejected), got {capacity!r}",
            )
        if not isinstance(closed, bool):
            fail(None, "initial.closed", f"must be true or false, got {closed!r}")
        if capacity is not None and len(elements) > capacity:
            fail(None, "initial.elements", f"{len(elements)} elements exceed capacity {capacity}")
        self._capacity = capacity
        expiry = "expiry" in requirements(document)
        self._limits = limits
        self._adapter = await self.backend.queue(
            QueueInitial(elements=list(elements), capacity=capacity, closed=closed,
                         expiry=expiry, ttl=ttl, limits=limits), self.flavor
        )
        names = set(self._adapter.readers())
        expected = set(READERS) | (set(LIMIT_READERS) if limits is not None else set())
        if names != expected:
            fail(None, "readers",
                 f"the adapter must expose {sorted(expected)}, got {sorted(names)}")

    def mint_probes(self) -> ProbeSet:
        return ProbeSet(self.adapter.readers(), consistency=self._consistent)

    def _consistent(self, values: Mapping[str, Any]) -> str | None:
        n = values["len"]
        cap = self._capacity
        if values["is_empty"] is not (n == 0):
            return f"len={n} but is_empty={values['is_empty']}"
        if self._limits is not None:
            limits = self._limits
            if limits.overflow == "drop_oldest" and values["is_full"]:
                return "is_full under drop_oldest"
            if limits.max_length is not None and n > limits.max_length:
                return f"len={n} over max_length {limits.max_length}"
            if limits.max_bytes is not None and values["bytes"] > limits.max_bytes:
                return f"bytes={values['bytes']} over max_bytes {limits.max_bytes}"
        elif values["is_full"] is not (cap is not None and n >= cap):
            return f"len={n} with capacity {cap} but is_full={values['is_full']}"
        if (values["head"] is EMPTY) is not (n == 0):
            return f"len={n} but head={_json_head(values['head'])!r}"
        return None

    def coalesced(self, op: Mapping[str, Any]) -> bool:
        return op.get("type") in ("batch", "transaction")

    async def perform(self, step: int, op: Mapping[str, Any]) -> Any:
        adapter = self.adapter
        kind = op["type"]
        if kind == "transaction":
            ops = transactions.checked_ops(step, "QueueCell", op["ops"])
            return await adapter.transaction(ops)
        if kind == "advance_clock":
            self.advance_clock(step, op)
            return None
        if kind == "push":
            refused = await self._push(op)
            if refused is not None:
                fail(
                    step,
                    "op.push",
                    f"push of {op['value']!r} was refused with {outcome_label(refused)}; the "
                    "fixture op 'push' must succeed (use 'try_push' to expect a refusal)",
                )
            return None
        if kind == "try_push":
            return outcome_label(await self._push(op))
        if kind in ("pop", "try_pop"):
            return outcome_label(await adapter.try_pop())
        if kind == "close":
            await adapter.close()
            return None
        if kind == "poll_messages":
            n, back = op["n"], op.get("give_back", 0)
            if not is_int(n) or n < 1 or not is_int(back) or back < 0:
                fail(step, "op.poll_messages", "n must be an int >= 1 and give_back >= 0")
            taken = await adapter.poll_messages(n, back)
            return taken if isinstance(taken, list) else outcome_label(taken)
        if kind == "batch":
            values = self._batch_values(step, op["ops"])
            outcomes = await adapter.push_batch(values)
            for index, refused in enumerate(outcomes):
                if refused is not None:
                    fail(
                        step,
                        f"op.batch.ops[{index}]",
                        f"push of {values[index]!r} inside the batch was refused with "
                        f"{outcome_label(refused)}; batch pushes must succeed",
                    )
            return None
        raise AssertionError(f"unhandled QueueCell op {kind!r}")

    async def _push(self, op: Mapping[str, Any]) -> Any:
        given = {k: op[k] for k in PUSH_OPTIONS if k in op}
        if "delay" in given or len(given) > 1:  # options combined: one push
            return await self.adapter.push_options(op["value"], given)
        if "headers" in op:
            return await self.adapter.push_headers(op["value"], op["headers"], op.get("msg_id"))
        return await self.adapter.try_push(op["value"], op.get("msg_id"), op.get("ttl"))

    @staticmethod
    def _batch_values(step: int, ops: Any) -> list[Any]:
        if not isinstance(ops, list) or not ops:
            fail(step, "op.batch.ops", f"must be a non-empty array, got {ops!r}")
        values = []
        for index, inner in enumerate(ops):
            where = f"op.batch.ops[{index}]"
            if not isinstance(inner, dict) or inner.get("type") != "push":
                fail(step, where, f"batch ops must be {{type: 'push', value}}, got {inner!r}")
            unknown = sorted(set(inner) - BATCH_OP_KEYS)
            if unknown:
                fail(step, where, f"unknown field(s) {unknown}")
            if "value" not in inner:
                fail(step, where, "missing field 'value'")
            values.append(inner["value"])
        return values

    def state(self, step: int, key: str) -> Any:
        if key == "elements":
            return self.adapter.elements()
        if key == "expired":
            return self.adapter.expired()
        if key == "delayed_len":
            return self.adapter.delayed_len()
        value = self.adapter.readers()[key].get()
        return _json_head(value) if key == "head" else value
