"""WorkQueueCell fixtures: configuration ``initial``, ops with ``returns`` on every step (§5.4).

Extension: a ``declare`` op (``visibility_timeout``, ``max_deliveries``, ``retry``,
``limits``) declares the work queue again, as another process opening it: ``null`` with
the same configuration, ``"Mismatch"`` (nothing changed) with any other.

Extension: ``initial.limits`` (a work queue with limits): a push they refuse returns
``"Full"``, and the state key ``dropped`` is the number of items ``drop_oldest`` dropped.
A push may combine ``msg_id``, ``headers``, ``ttl``, ``priority``, ``delay`` and ``now``
(the time a delay or ttl counts from, fixture units); state keys ``expired`` (items that
expired undelivered) and ``headers`` (``{item_id: headers}`` of the items held).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import LimitExceeded
from . import transactions
from .backend import WorkQueueAdapter, WorkQueueInitial
from .compare import fail, is_int, require_object
from .engine import ModelRunner, OpSpec, register_runner
from .probes import ProbeSet
from .queue import limits_of_fixture

READERS = ("pending_len", "is_empty", "in_flight_len", "dead_letter_len")
INITIAL_KEYS = frozenset(
    {"visibility_timeout", "max_deliveries", "pending", "in_flight", "dead_letters"}
)
#: Keys ``initial`` may have besides :data:`INITIAL_KEYS`.
OPTIONAL_INITIAL = frozenset({"retry"})
#: Op fields that make a push or nack a scheduled one (capability ``scheduling``).
SCHEDULED = ("priority", "delay")
#: Push fields that make a push one with options (several may combine).
COMBINED = ("ttl", "headers")


@register_runner
class WorkQueueRunner(ModelRunner):
    model = "WorkQueueCell"
    ops = {
        "push": OpSpec(required=("value",), optional=("msg_id", "priority", "delay", "now",
                                                      "ttl", "headers")),
        "claim": OpSpec(required=("worker", "now")),
        "ack": OpSpec(required=("worker", "delivery_id")),
        "nack": OpSpec(required=("worker", "delivery_id"), optional=("delay", "now")),
        "reap_expired": OpSpec(required=("now",)),
        "promote_due": OpSpec(required=("now",)),
        "declare": OpSpec(required=("visibility_timeout", "max_deliveries"),
                          optional=("retry", "limits")),
        "transaction": transactions.TRANSACTION,
    }
    state_keys = frozenset({"pending", "in_flight", "dead_letters", "delayed", "reads",
                            "dropped", "expired", "headers"})
    returns_required = True

    _adapter: WorkQueueAdapter | None = None

    @property
    def adapter(self) -> WorkQueueAdapter:
        assert self._adapter is not None, "build() has not run"
        return self._adapter

    async def build(self, initial: Any, document: Mapping[str, Any]) -> None:
        limits = None
        if isinstance(initial, dict) and "limits" in initial:
            initial = dict(initial)
            limits = limits_of_fixture(initial.pop("limits"))
        retry = initial.get("retry") if isinstance(initial, dict) else None
        if isinstance(initial, dict) and "retry" in initial:
            initial = {k: v for k, v in initial.items() if k not in OPTIONAL_INITIAL}
            if not isinstance(retry, list) or len(retry) != 3:
                fail(None, "initial.retry", f"must be [base, factor, cap], got {retry!r}")
        initial = require_object(initial, "initial", INITIAL_KEYS)
        for key in ("pending", "in_flight", "dead_letters"):
            if initial[key] != []:
                fail(
                    None,
                    f"initial.{key}",
                    f"must be an empty list (work-queue fixtures start empty and the "
                    f"runner rejects seeded state), got {initial[key]!r}",
                )
        timeout, limit = initial["visibility_timeout"], initial["max_deliveries"]
        if not is_int(timeout) or timeout <= 0:
            fail(None, "initial.visibility_timeout", f"must be an int > 0, got {timeout!r}")
        if not is_int(limit) or limit < 1:
            fail(None, "initial.max_deliveries", f"must be an int >= 1, got {limit!r}")
        self._adapter = await self.backend.work_queue(
            WorkQueueInitial(visibility_timeout=timeout, max_deliveries=limit, retry=retry,
                             limits=limits, expiry=_uses_ttl(document)),
            self.flavor
        )
        names = set(self._adapter.readers())
        if names != set(READERS):
            fail(None, "readers", f"the adapter must expose {list(READERS)}, got {sorted(names)}")

    def mint_probes(self) -> ProbeSet:
        return ProbeSet(self.adapter.readers(), consistency=self._consistent)

    @staticmethod
    def _consistent(values: Mapping[str, Any]) -> str | None:
        if values["is_empty"] is not (values["pending_len"] == 0):
            return f"pending_len={values['pending_len']} but is_empty={values['is_empty']}"
        return None

    def coalesced(self, op: Mapping[str, Any]) -> bool:
        return op.get("type") == "transaction"

    async def perform(self, step: int, op: Mapping[str, Any]) -> Any:
        adapter = self.adapter
        kind = op["type"]
        if kind == "transaction":
            ops = transactions.checked_ops(step, "WorkQueueCell", op["ops"])
            return await adapter.transaction(ops)
        if kind == "push" and (any(key in op for key in COMBINED) or (
                "msg_id" in op and any(key in op for key in SCHEDULED))):
            return await adapter.push_options(op["value"], op)
        if kind == "push" and any(key in op for key in SCHEDULED):
            try:
                return await adapter.push_scheduled(op["value"], op.get("priority", 0),
                                                    op.get("delay"), op.get("now"))
            except LimitExceeded:
                return "Full"
        if kind == "push":
            try:
                return await adapter.push(op["value"], op.get("msg_id"))
            except LimitExceeded:
                return "Full"
        if kind == "nack" and "delay" in op:
            return await adapter.nack_delayed(op["worker"], op["delivery_id"], op["delay"],
                                              op["now"])
        if kind == "promote_due":
            return await adapter.promote_due(op["now"])
        if kind == "declare":
            return await adapter.declare(op)
        if kind == "claim":
            return await adapter.claim(op["worker"], op["now"])
        if kind == "ack":
            return await adapter.ack(op["worker"], op["delivery_id"])
        if kind == "nack":
            return await adapter.nack(op["worker"], op["delivery_id"])
        if kind == "reap_expired":
            return await adapter.reap_expired(op["now"])
        raise AssertionError(f"unhandled WorkQueueCell op {kind!r}")

    def state(self, step: int, key: str) -> Any:
        adapter = self.adapter
        if key == "pending":
            return adapter.pending()
        if key == "in_flight":
            return adapter.in_flight()
        if key == "dead_letters":
            return adapter.dead_letters()
        if key == "delayed":
            return adapter.delayed()
        if key == "expired":
            return adapter.expired()
        if key == "headers":
            return adapter.item_headers()
        if key == "dropped":
            cell = getattr(adapter, "cell", None)
            if cell is None:
                fail(step, key, f"{type(adapter).__name__} has no cell to read dropped from")
            return cell.dropped()
        return {name: slot.get() for name, slot in adapter.readers().items()}


def work_queue_needs(document: Mapping[str, Any]) -> set[str]:
    """The capabilities (keys of :data:`~.backend.CAPABILITIES`) a work-queue fixture
    needs, read from its steps: ``logical_time`` when an op comes at a time past the
    deadline of a lease still live (the fixture relies on its time passing: a reap that
    expires it, a claim or settlement after it); ``tail_requeue`` when an expected
    pending list has a redelivery behind a never-delivered item or behind a redelivery
    of a younger item; ``redelivery_view`` when it lists a redelivery at all;
    ``promote_at`` when it has a ``promote_due`` op (a promotion at the step's time)."""
    needed: set[str] = set()
    live: dict[Any, Any] = {}
    initial = document.get("initial")
    if isinstance(initial, dict) and "retry" in initial:
        needed.add("scheduling")
    for step in _objects(document.get("steps")):
        op = step.get("op")
        op = op if isinstance(op, dict) else {}
        if any(key in op for key in SCHEDULED) or op.get("type") == "promote_due":
            needed.add("scheduling")
        if op.get("type") == "promote_due":
            needed.add("promote_at")
        now = op.get("now")
        if isinstance(now, int) and any(
                isinstance(deadline, int) and now > deadline for deadline in live.values()):
            needed.add("logical_time")
        returns = step.get("returns")
        if op.get("type") == "claim" and isinstance(returns, dict):
            live[returns.get("delivery_id")] = returns.get("deadline")
        elif op.get("type") in ("ack", "nack") and returns is True:
            live.pop(op.get("delivery_id"), None)
        expected = step.get("expected")
        pending = expected.get("pending") if isinstance(expected, dict) else None
        attempts = [(item.get("attempts"), item.get("item_id"))
                    for item in _objects(pending)]
        again = [item for count, item in attempts
                 if isinstance(count, int) and count > 0 and isinstance(item, int)]
        if again:
            needed.add("redelivery_view")
        first_fresh = next((i for i, (count, _) in enumerate(attempts) if count == 0),
                           len(attempts))
        if len(again) > first_fresh or again != sorted(again):
            needed.add("tail_requeue")
    return needed


def _uses_ttl(document: Mapping[str, Any]) -> bool:
    return any("ttl" in step["op"] for step in _objects(document.get("steps"))
               if isinstance(step.get("op"), dict))


def _objects(value: Any) -> Iterable[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []
