"""Tiny reference models of TopicCell and WorkQueueCell, written straight from the spec
tables and independent of the cores: the property tests and the fixture generator
compare the real implementation against them.

The topic model never drops anything from its log, so its reads also check the
retention law (GC never removes an element a stored cursor still reads).
"""

from __future__ import annotations

from typing import Any

PENDING_LEN, IS_EMPTY, IN_FLIGHT_LEN, DEAD_LETTER_LEN = 1, 2, 4, 8


class TopicModel:
    def __init__(self) -> None:
        self.log: list[Any] = []  # every element ever published, at its absolute offset
        self.base = 0
        self.subs: dict[str, dict[str, Any]] = {}

    def _connected(self) -> set[str]:
        return {s for s, r in self.subs.items() if r["connected"]}

    def subscribe(self, sub: str, durability: str) -> tuple[str, set[str]]:
        rec = self.subs.get(sub)
        if rec is None:
            self.subs[sub] = {"durability": durability, "connected": True, "cursor": len(self.log)}
            return "Subscribed", {sub}
        if rec["connected"]:
            return "AlreadyConnected", set()
        rec["connected"] = True
        return "Reconnected", {sub}

    def reconnect(self, sub: str) -> tuple[bool, set[str]]:
        rec = self.subs.get(sub)
        if rec is None or rec["connected"]:
            return False, set()
        rec["connected"] = True
        return True, {sub}

    def disconnect(self, sub: str) -> tuple[bool, set[str]]:
        rec = self.subs.get(sub)
        if rec is None or not rec["connected"]:
            return False, set()
        if rec["durability"] == "ephemeral":
            del self.subs[sub]
        else:
            rec["connected"] = False
        return True, {sub}

    def publish(self, value: Any) -> tuple[int, set[str]]:
        self.log.append(value)
        return len(self.log) - 1, self._connected()

    def advance(self, sub: str) -> tuple[Any, set[str]]:
        rec = self.subs.get(sub)
        if rec is None or not rec["connected"] or rec["cursor"] >= len(self.log):
            return None, set()
        rec["cursor"] += 1
        return self.log[rec["cursor"] - 1], {sub}

    def gc(self) -> tuple[int, set[str]]:
        durable = [r["cursor"] for r in self.subs.values() if r["durability"] == "durable"]
        frontier = min(durable) if durable else len(self.log)
        removed = max(0, frontier - self.base)
        self.base = max(self.base, frontier)
        clamped = set()
        for sub, rec in self.subs.items():
            if rec["cursor"] < self.base:  # only ephemeral cursors can lag the frontier
                assert rec["durability"] == "ephemeral"
                rec["cursor"] = self.base
                clamped.add(sub)
        return removed, clamped

    def elements(self) -> list[Any]:
        return self.log[self.base :]

    def reads(self) -> dict[str, list[Any]]:
        return {s: self.log[r["cursor"] :] for s, r in self.subs.items() if r["connected"]}

    def subscriptions(self) -> dict[str, dict[str, Any]]:
        return {s: dict(r) for s, r in self.subs.items()}


class WorkModel:
    def __init__(self, visibility_timeout: int, max_deliveries: int) -> None:
        self.vt = visibility_timeout
        self.max = max_deliveries
        self.pending: list[dict[str, Any]] = []
        self.in_flight: list[dict[str, Any]] = []  # kept in ascending delivery_id
        self.dead: list[dict[str, Any]] = []
        self.next_item = 0
        self.next_delivery = 0

    def counts(self) -> tuple[int, int, int]:
        return len(self.pending), len(self.in_flight), len(self.dead)

    def _mask(self, before: tuple[int, int, int]) -> int:
        after = self.counts()
        mask = 0
        if before[0] != after[0]:
            mask |= PENDING_LEN
        if (before[0] == 0) != (after[0] == 0):
            mask |= IS_EMPTY
        if before[1] != after[1]:
            mask |= IN_FLIGHT_LEN
        if before[2] != after[2]:
            mask |= DEAD_LETTER_LEN
        return mask

    def push(self, value: Any) -> tuple[int, int]:
        before = self.counts()
        self.pending.append({"item_id": self.next_item, "value": value, "attempts": 0})
        self.next_item += 1
        return self.next_item - 1, self._mask(before)

    def claim(self, worker: str, now: int) -> tuple[dict[str, Any] | None, int]:
        if not self.pending:
            return None, 0
        before = self.counts()
        item = self.pending.pop(0)
        delivery = {
            "delivery_id": self.next_delivery, "item_id": item["item_id"],
            "value": item["value"], "worker": worker, "attempt": item["attempts"] + 1,
            "deadline": now + self.vt,
        }
        self.next_delivery += 1
        self.in_flight.append(delivery)
        return dict(delivery), self._mask(before)

    def _find(self, worker: str, delivery_id: int) -> dict[str, Any] | None:
        for d in self.in_flight:
            if d["delivery_id"] == delivery_id and d["worker"] == worker:
                return d
        return None

    def _fail(self, d: dict[str, Any], reason: str) -> None:
        self.in_flight.remove(d)
        if d["attempt"] < self.max:
            self.pending.append({"item_id": d["item_id"], "value": d["value"],
                                 "attempts": d["attempt"]})
        else:
            self.dead.append({"item_id": d["item_id"], "value": d["value"],
                              "attempts": d["attempt"], "reason": reason})

    def ack(self, worker: str, delivery_id: int) -> tuple[bool, int]:
        d = self._find(worker, delivery_id)
        if d is None:
            return False, 0
        before = self.counts()
        self.in_flight.remove(d)
        return True, self._mask(before)

    def nack(self, worker: str, delivery_id: int) -> tuple[bool, int]:
        d = self._find(worker, delivery_id)
        if d is None:
            return False, 0
        before = self.counts()
        self._fail(d, "nack")
        return True, self._mask(before)

    def reap_expired(self, now: int) -> tuple[int, int]:
        before = self.counts()
        expired = [d for d in self.in_flight if d["deadline"] < now]
        for d in expired:
            self._fail(d, "expired")
        return len(expired), self._mask(before)

    def reads(self) -> dict[str, Any]:
        return {"pending_len": len(self.pending), "is_empty": not self.pending,
                "in_flight_len": len(self.in_flight), "dead_letter_len": len(self.dead)}
