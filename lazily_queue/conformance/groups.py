"""Consumer-group and replay ops of TopicCell fixtures, on any backend's TopicCell.

Group ops name the group; its settings come from the fixture's ``group`` op
(``visibility_timeout`` in the fixture's time unit, default 30; ``max_deliveries``,
default 3; ``start``, default ``"tail"``). ``lease_unit`` converts the fixture's unit
to the seconds ``TopicCell.group`` takes (1 locally: the cell's clock unit is the
fixture's; 0.001 over Raft, whose leases count milliseconds).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..cells.group import GroupCell
from ..cells.topic import TopicCell
from ..errors import SettlementRejected

GROUP_OPS = ("group", "group_claim", "group_ack", "group_nack", "group_leave", "group_reap")


def open_group(cell: TopicCell[Any], name: str, settings: Mapping[str, Any],
               lease_unit: float) -> GroupCell:
    return cell.group(name, visibility_timeout=settings.get("visibility_timeout", 30) * lease_unit,
                      max_deliveries=settings.get("max_deliveries", 3),
                      start=settings.get("start", "tail"))


async def group_op(cell: TopicCell[Any], op: Mapping[str, Any], settings: Mapping[str, Any],
                   lease_unit: float) -> Any:
    """Perform one group op; its JSON-shaped result."""
    kind = op["type"]
    group = open_group(cell, op["group"], settings, lease_unit)
    if kind == "group":
        await group.declare()
        return None
    if kind == "group_claim":
        delivery = await group.poll(op["member"], op["now"])
        if delivery is None:
            return None
        return {"delivery_id": delivery.delivery_id, "item_id": delivery.item_id,
                "value": delivery.value, "attempt": delivery.attempt}
    if kind in ("group_ack", "group_nack"):
        settle = group.ack if kind == "group_ack" else group.nack
        try:
            await settle(op["member"], op["delivery_id"])
        except SettlementRejected:
            return False
        return True
    if kind == "group_leave":
        return await group.leave(op["member"])
    if kind == "group_reap":
        return await group.reap_expired(op["now"])
    raise AssertionError(f"unhandled group op {kind!r}")


def group_states(cell: TopicCell[Any], settings: Mapping[str, Mapping[str, Any]],
                 lease_unit: float) -> dict[str, Any]:
    """``{group: {pending: [item ids], in_flight: {member: [item ids]}, lag}}``."""
    states: dict[str, Any] = {}
    for name, spec in settings.items():
        group = open_group(cell, name, spec, lease_unit)
        states[name] = {
            "pending": [p.item_id for p in group.pending()],
            "in_flight": {member: [d.item_id for d in ds]
                          for member, ds in sorted(group.in_flight_by_worker().items())},
            "lag": group.lag(),
        }
    return states
