"""TopicCell fixtures: snapshot ``initial``, subscriber probes, restart (spec §5.3).

Extensions: ``initial.limits`` (retention by count and bytes, with the state keys
``dropped``, the elements it dropped, and ``gaps``, per subscriber the elements dropped
before it read them, ``bytes``, the retained bytes, and ``expired``, the elements that
left by expiry; a limit's ``overflow`` may be ``reject``: a publish it refuses raises
``LimitExceeded``); ``subscribe`` with a ``start`` and ``seek`` (replay); ``subscribe``
with a ``start_time`` and ``seek_time`` with a ``time`` (replay by time: ISO 8601
strings, read with ``datetime.fromisoformat``; one without an offset is naive);
``publish`` with ``headers`` and/or its own ``ttl`` (seconds), ``read_messages`` (the
unread suffix as ``[{id, value, headers?}]``, nothing consumed); consumer-group ops
``group`` (opens it: ``start``, ``visibility_timeout``, ``max_deliveries``),
``group_claim`` / ``group_ack`` / ``group_nack`` / ``group_leave`` / ``group_reap``
and the ``groups`` state key (see :mod:`.groups`), with ``group_expired``: per group,
the elements that expired before their first delivery (on a topic with expiry).

One probe per subscriber id that appears anywhere in the fixture, minted before step
0 (also for ids that are not subscribed yet). ``restart`` rebuilds the model through
the backend and re-mints every probe, so its expectation is all false.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from . import transactions
from .backend import SubscriptionRecord, TopicAdapter, TopicInitial
from .compare import fail, is_int, require_object
from .engine import ModelRunner, OpSpec, register_runner
from .probes import ProbeSet
from .queue import limits_of_fixture

INITIAL_KEYS = frozenset({"base_offset", "elements", "subscriptions"})
RECORD_KEYS = frozenset({"durability", "connected", "cursor"})


def _json(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    return value


def subscriber_ids(document: Mapping[str, Any]) -> list[str]:
    """Every subscriber id named in ``initial``, an op or an expectation, in first-seen order."""
    seen: dict[str, None] = {}
    initial = document.get("initial")
    if isinstance(initial, dict) and isinstance(initial.get("subscriptions"), dict):
        seen.update(dict.fromkeys(initial["subscriptions"]))
    for step in document.get("steps") or []:
        if not isinstance(step, dict):
            continue
        op = step.get("op")
        if isinstance(op, dict) and isinstance(op.get("subscriber"), str):
            seen[op["subscriber"]] = None
        expected = step.get("expected")
        if isinstance(expected, dict):
            for key in ("subscriptions", "invalidates", "reads"):
                block = expected.get(key)
                if isinstance(block, dict):
                    seen.update(dict.fromkeys(k for k in block if isinstance(k, str)))
    return list(seen)


def _time(step: int, text: Any) -> datetime:
    """A fixture's time (an ISO 8601 string) as a ``datetime``."""
    try:
        return datetime.fromisoformat(text)
    except (TypeError, ValueError):
        fail(step, "op", f"a time must be an ISO 8601 string, got {text!r}")


@register_runner
class TopicRunner(ModelRunner):
    model = "TopicCell"
    ops = {
        "publish": OpSpec(required=("value",), optional=("msg_id", "headers", "ttl")),
        "read_messages": OpSpec(required=("subscriber",)),
        "subscribe": OpSpec(required=("subscriber",),
                            optional=("durability", "start", "start_time")),
        "seek": OpSpec(required=("subscriber", "offset")),
        "seek_time": OpSpec(required=("subscriber", "time")),
        "group": OpSpec(required=("group",),
                        optional=("start", "visibility_timeout", "max_deliveries")),
        "group_claim": OpSpec(required=("group", "member", "now")),
        "group_ack": OpSpec(required=("group", "member", "delivery_id")),
        "group_nack": OpSpec(required=("group", "member", "delivery_id")),
        "group_leave": OpSpec(required=("group", "member")),
        "group_reap": OpSpec(required=("group", "now")),
        "reconnect": OpSpec(required=("subscriber",)),
        "disconnect": OpSpec(required=("subscriber",)),
        "delete_subscriber": OpSpec(required=("subscriber",)),
        "advance": OpSpec(required=("subscriber",)),
        "gc": OpSpec(),
        "advance_clock": OpSpec(required=("seconds",)),
        "restart": OpSpec(optional=("subscriber",)),
        "transaction": transactions.TRANSACTION,
    }
    state_keys = frozenset({"base_offset", "elements", "subscriptions", "reads", "groups",
                            "group_expired", "dropped", "gaps", "bytes", "expired"})

    _adapter: TopicAdapter | None = None
    _ids: list[str]
    #: Each group's settings, from its ``group`` op (later ops reopen it with them).
    _groups: dict[str, dict[str, Any]]

    @property
    def adapter(self) -> TopicAdapter:
        assert self._adapter is not None, "build() has not run"
        return self._adapter

    async def build(self, initial: Any, document: Mapping[str, Any]) -> None:
        max_age = initial.get("max_age") if isinstance(initial, dict) else None
        if isinstance(initial, dict):
            initial = {k: v for k, v in initial.items() if k != "max_age"}  # optional
        if max_age is not None and (not isinstance(max_age, (int, float))
                                    or isinstance(max_age, bool) or max_age <= 0):
            fail(None, "initial.max_age", f"must be a number of seconds > 0, got {max_age!r}")
        limits = None
        if isinstance(initial, dict) and "limits" in initial:
            initial = dict(initial)
            limits = limits_of_fixture(initial.pop("limits"))
        initial = require_object(initial, "initial", INITIAL_KEYS)
        base, elements, subs = initial["base_offset"], initial["elements"], initial["subscriptions"]
        if not is_int(base) or base < 0:
            fail(None, "initial.base_offset", f"must be an int >= 0, got {base!r}")
        if not isinstance(elements, list):
            fail(None, "initial.elements", f"must be an array, got {elements!r}")
        if not isinstance(subs, dict):
            fail(None, "initial.subscriptions", f"must be an object, got {subs!r}")
        records = {}
        for sid, raw in subs.items():
            where = f"initial.subscriptions.{sid}"
            raw = require_object(raw, where, RECORD_KEYS)
            if not isinstance(raw["connected"], bool) or not is_int(raw["cursor"]):
                fail(None, where, f"connected must be a bool and cursor an int, got {raw!r}")
            records[sid] = SubscriptionRecord(raw["durability"], raw["connected"], raw["cursor"])
        self._ids = subscriber_ids(document)
        self._groups = {}
        self._adapter = await self.backend.topic(
            TopicInitial(base_offset=base, elements=list(elements), subscriptions=records,
                         max_age=max_age, limits=limits),
            self.flavor,
        )

    def mint_probes(self) -> ProbeSet:
        adapter = self.adapter
        return ProbeSet({sid: adapter.reader(sid) for sid in self._ids})

    def coalesced(self, op: Mapping[str, Any]) -> bool:
        return op.get("type") == "transaction"

    async def perform(self, step: int, op: Mapping[str, Any]) -> Any:
        adapter = self.adapter
        kind = op["type"]
        if kind == "transaction":
            ops = transactions.checked_ops(step, "TopicCell", op["ops"])
            return await adapter.transaction(ops)
        if kind == "advance_clock":
            self.advance_clock(step, op)
            return None
        if kind == "publish":
            if "headers" in op or "ttl" in op:
                return _json(await adapter.publish_headers(op["value"], op.get("headers"),
                                                           op.get("msg_id"), op.get("ttl")))
            return _json(await adapter.publish(op["value"], op.get("msg_id")))
        if kind == "read_messages":
            return await adapter.read_messages(op["subscriber"])
        if kind == "subscribe":
            durability = op.get("durability", "durable")
            if "start_time" in op:
                when = _time(step, op["start_time"])
                return _json(await adapter.subscribe_at(op["subscriber"], durability, when))
            if "start" in op:
                return _json(await adapter.subscribe_at(op["subscriber"], durability,
                                                        op["start"]))
            return _json(await adapter.subscribe(op["subscriber"], durability))
        if kind == "seek":
            return await adapter.seek(op["subscriber"], op["offset"])
        if kind == "seek_time":
            return await adapter.seek(op["subscriber"], _time(step, op["time"]))
        if kind.startswith("group"):
            name = op["group"]
            if kind == "group" and name not in self._groups:
                self._groups[name] = {k: v for k, v in op.items() if k not in ("type", "group")}
                try:
                    return await adapter.group_op(op, self._groups[name])
                except Exception:
                    del self._groups[name]  # not opened: not in the state either
                    raise
            if name not in self._groups:
                fail(step, f"op.{kind}", f"group {name!r} is not opened by a 'group' op")
            return await adapter.group_op(op, self._groups[name])
        if kind == "reconnect":
            return _json(await adapter.reconnect(op["subscriber"]))
        if kind == "disconnect":
            return _json(await adapter.disconnect(op["subscriber"]))
        if kind == "delete_subscriber":
            return await adapter.delete_subscriber(op["subscriber"])
        if kind == "advance":
            return _json(await adapter.advance(op["subscriber"]))
        if kind == "gc":
            return await adapter.gc()
        if kind == "restart":
            await self._restart()
            return None
        raise AssertionError(f"unhandled TopicCell op {kind!r}")

    async def _restart(self) -> None:
        if self.probes is not None:
            self.probes.dispose()
            self.probes = None
        old = self.adapter
        self._adapter = await self.backend.restart(old)
        if self._adapter is not old:
            await old.dispose()
        self.probes = self.mint_probes()
        self.probes.baseline()

    def state(self, step: int, key: str) -> Any:
        adapter = self.adapter
        if key == "base_offset":
            return adapter.base_offset()
        if key == "elements":
            return adapter.elements()
        if key == "subscriptions":
            return adapter.subscriptions()
        if key == "groups":
            return adapter.groups(self._groups)
        if key == "group_expired":
            return adapter.group_expired(self._groups)
        if key in ("dropped", "gaps", "bytes", "expired"):
            cell = getattr(adapter, "cell", None)
            if cell is None:
                fail(step, key, f"{type(adapter).__name__} has no cell to read {key} from")
            if key in ("dropped", "bytes", "expired"):
                return getattr(cell, key)()
            return {sid: cell.gap(sid) for sid in adapter.subscriptions() if cell.gap(sid)}
        return self._reads(step)

    def _reads(self, step: int) -> dict[str, Any]:
        """``read_stream`` of exactly the connected subscribers, via their readers."""
        adapter = self.adapter
        reads: dict[str, Any] = {}
        for sid, record in adapter.subscriptions().items():
            if not record.get("connected"):
                continue
            value = adapter.reader(sid).get()
            stream = adapter.read_stream(sid)
            if value != stream:
                fail(
                    step,
                    f"reads.{sid}",
                    f"the reader holds {value!r} but read_stream gives {stream!r} "
                    "(a stale reader: a missing invalidation)",
                )
            reads[sid] = value
        return reads
