"""Administration of a running node: the actions behind the admin API and CLI.

Every action goes through the replicated log (purge, delete, deleting a topic's
subscriber, redrive, membership) or reads this node's applied state after a barrier
(listings), so it means the same on every member. A refusal raises :class:`AdminError`
carrying a stable ``code``, an HTTP ``status`` and a one-line message; the admin API
returns it as ``{"error": {"code": ..., "message": ...}}``.
"""

from __future__ import annotations

import datetime
import math
from typing import TYPE_CHECKING, Any

from . import membership
from .errors import InvalidConfiguration, LazilyQueueError
from .member_checks import addition_problem
from .names import member_problem, name_problem
from .raft.errors import (
    CommitTimeout,
    NodeNotRunning,
    NoQuorum,
    ProposalRejected,
    StorageUnavailable,
)
from .reconfig_check import adding_problem, removing_problem
from .replicated import ops
from .storage.replicated_object import raise_op_error

if TYPE_CHECKING:
    from .node import Node

#: Object kinds as the API and CLI name them.
KINDS = ("queue", "work_queue", "topic")
#: Most dead letters one listing returns.
MAX_LISTING = 1000


class AdminError(LazilyQueueError):
    """An admin action was refused; ``code`` is stable, ``status`` the HTTP status."""

    def __init__(self, code: str, message: str, status: int = 400,
                 **extra: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status
        self.extra = extra

    def document(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, **self.extra}}


def _refused(exc: BaseException) -> AdminError:
    """The admin error of a failed replicated operation."""
    if isinstance(exc, AdminError):
        return exc
    if isinstance(exc, NoQuorum):
        return AdminError("no_quorum", str(exc), 503)
    if isinstance(exc, CommitTimeout):
        return AdminError("timeout", str(exc), 504)
    if isinstance(exc, StorageUnavailable):
        return AdminError("storage_unavailable", str(exc), 503)
    if isinstance(exc, NodeNotRunning):
        return AdminError("not_running", str(exc), 503)
    if isinstance(exc, ProposalRejected):
        text = str(exc)
        code = text.split(":", 1)[0]
        if code.startswith("unknown_"):
            return AdminError("not_found", text.split(": ", 1)[-1], 404)
        return AdminError("refused", text, 409)
    if isinstance(exc, InvalidConfiguration):
        return AdminError("refused", str(exc), 409)
    if isinstance(exc, TimeoutError):
        return AdminError("timeout", str(exc) or "the action timed out", 504)
    raise exc


async def _call(node: Node, code: int, args: list[Any]) -> Any:
    try:
        return raise_op_error(await node.driver.call(code, args, timeout=node.op_timeout))
    except LazilyQueueError as exc:
        raise _refused(exc) from None
    except TimeoutError as exc:
        raise _refused(exc) from None


def check_kind(kind: str) -> str:
    if kind not in KINDS:
        raise AdminError("bad_request", f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
    return kind


def check_name(name: Any, what: str = "name") -> str:
    """``name`` under the name rule of :mod:`.names`, else a ``bad_request``."""
    problem = name_problem(name, what)
    if problem is not None:
        raise AdminError("bad_request", problem)
    return str(name)


async def barrier(node: Node) -> None:
    try:
        await node.barrier()
    except LazilyQueueError as exc:
        raise _refused(exc) from None
    except TimeoutError as exc:
        raise _refused(exc) from None


async def list_objects(node: Node) -> list[dict[str, Any]]:
    """Every queue, work queue and topic with its figures (after a barrier)."""
    await barrier(node)
    view = node.view
    found: list[dict[str, Any]] = []
    for name, q in sorted(view.queues.items()):
        found.append({"kind": "queue", "name": name, "depth": q.len(),
                      "capacity": q.capacity(), "closed": q.is_closed()})
    for name, w in sorted(view.work_queues.items()):
        core = w.core
        found.append({"kind": "work_queue", "name": name, "depth": core.pending_len(),
                      "in_flight": core.in_flight_len(),
                      "dead_letters": core.dead_letter_len()})
    for name, t in sorted(view.topics.items()):
        found.append({"kind": "topic", "name": name,
                      "depth": t.end_offset() - t.base_offset(),
                      "subscribers": len(t.subscriptions())})
    return found


async def purge(node: Node, kind: str, name: str, *, dead_letters: bool = False) -> int:
    """Drop the elements of a queue or the pending items (or dead letters) of a work
    queue; returns how many were dropped."""
    check_kind(kind)
    check_name(name)
    if kind == "queue":
        if dead_letters:
            raise AdminError("bad_request", "queues have no dead letters; purge a work queue")
        return int(await _call(node, ops.QUEUE_PURGE, [name]))
    if kind == "work_queue":
        return int(await _call(node, ops.WORK_PURGE, [name, bool(dead_letters)]))
    raise AdminError("bad_request", "a topic is not purged: its elements go once every "
                                    "subscriber has read them; delete it instead")


async def delete(node: Node, kind: str, name: str) -> int:
    """Forget a queue, work queue or topic; returns how many elements it held."""
    code = {"queue": ops.QUEUE_DELETE, "work_queue": ops.WORK_DELETE,
            "topic": ops.TOPIC_DELETE}[check_kind(kind)]
    return int(await _call(node, code, [check_name(name)]))


async def delete_subscriber(node: Node, topic: str, subscriber: str) -> bool:
    """Forget one subscription of ``topic``, durable or ephemeral, connected or not: it
    frees its ``max_subscribers`` slot and its hold on retention. ``False`` when the topic
    has no such subscriber."""
    check_name(topic)
    if not isinstance(subscriber, str):
        raise AdminError("bad_request", f"subscriber must be a string, not {subscriber!r:.40}")
    problem = member_problem(subscriber, "subscriber name")
    if problem is not None:
        raise AdminError("bad_request", problem)
    return bool(await _call(node, ops.TOPIC_DELETE_SUBSCRIBER, [topic, subscriber]))


async def dead_letters(node: Node, name: str, *, offset: int = 0,
                       limit: int = 100) -> dict[str, Any]:
    """A page of the work queue's dead letters (after a barrier), oldest first."""
    check_name(name)
    if not 0 <= offset or not 1 <= limit <= MAX_LISTING:
        raise AdminError("bad_request",
                         f"offset must be >= 0 and limit in 1..{MAX_LISTING}")
    await barrier(node)
    state = node.view.work_queue(name)
    if state is None:
        raise AdminError("not_found", f"work queue {name!r} has not been declared", 404)
    letters = state.core.dead_letters()
    return {"name": name, "total": len(letters), "offset": offset,
            "dead_letters": [_letter(d.to_dict()) for d in letters[offset:offset + limit]]}


def _letter(doc: dict[str, Any]) -> dict[str, Any]:
    """A dead letter as JSON (see :func:`json_safe`)."""
    doc["value"] = json_safe(doc["value"])
    doc["reason"] = str(doc["reason"])
    return doc


def json_safe(value: Any) -> Any:
    """``value`` (of the value model) as strict JSON can hold it: tuples and sets become
    lists, dates and times ISO text, bytes, non-finite floats and other scalars their
    ``repr`` or text; dict keys are text."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, dict):
        return {k if isinstance(k, str) else repr(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if isinstance(value, set | frozenset):
        return sorted((json_safe(v) for v in value), key=repr)
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, bytes):
        return repr(value)
    return str(value)


async def redrive(node: Node, name: str, item_ids: list[int] | None = None) -> int:
    """Move dead letters (all, or those with ``item_ids``) back to the pending tail."""
    check_name(name)
    if item_ids is not None and (not isinstance(item_ids, list) or not all(
            isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in item_ids)):
        raise AdminError("bad_request", "item_ids must be a list of item ids (integers >= 0)")
    result = await _call(node, ops.WORK_REDRIVE, [name, item_ids])
    return int(result[0])


def members(node: Node) -> list[dict[str, Any]]:
    """The members as this node sees them (role, reachability, lag)."""
    from .status import bare_status, plain

    return list(plain(bare_status(node, objects=False)["members"]))


def _leader_hint(node: Node) -> dict[str, Any]:
    leader = node.leader_id
    return {"leader": leader,
            "leader_page": None if leader is None else node.view.member_pages.get(leader)}


def _not_leader(node: Node, what: str) -> AdminError:
    """``not_leader`` for ``what`` (made on the leader), naming the leader this node
    knows and its page, or saying none is known or can be elected. A node that reaches
    no majority names no leader: the one it last heard of may be gone."""
    stranded = _no_quorum(node)
    hint = {"leader": None, "leader_page": None} if stranded else _leader_hint(node)
    leader, page = hint["leader"], hint["leader_page"]
    if stranded:
        where = stranded
    elif leader is None:
        where = "no leader is known now: ask again once one is elected"
    else:
        where = f"node {leader} leads: ask it" + (f" (its page: {page})" if page else "")
    return AdminError("not_leader", f"node {node.node_id} is not the leader; {what} are "
                      f"made on the leader, and {where}", 409, **hint)


def _no_quorum(node: Node) -> str | None:
    """Why no leader can be elected while ``node`` reaches no majority, or ``None``."""
    status = node.driver.replica.status()
    members = [str(m) for m in status["members"]]
    up = [m for m in members if m == node.node_id or m in status["connected"]]
    need = len(members) // 2 + 1
    if len(up) >= need:
        return None
    down = [m for m in members if m not in up]
    return (f"no leader can be elected: node {node.node_id} reaches {len(up)} of the "
            f"{len(members)} members and {need} are needed; start the unreachable ones "
            f"({', '.join(down)}), then ask again")


async def add_member(node: Node, member: Any, address: Any, *, force: bool = False) -> None:
    """Add ``member`` at ``address``: refused (``bad_request``) as
    :func:`~lazily_queue.member_checks.addition_problem` says, and unless ``force``
    (``unsafe_change``) when the cluster would lose its quorum (:mod:`.reconfig_check`)."""
    member_id = str(member) if isinstance(member, int) else member
    problem = await addition_problem(node, member_id, address)
    if problem is not None:
        raise AdminError("bad_request", problem)
    check_name(address, "address")  # the API names the new member's address
    if node.is_leader and not force and member_id not in node.driver.replica.engine.members:
        _refuse_unsafe(adding_problem(node, member_id))
    await _membership(node, membership.add_checked(node, member_id, address, node.op_timeout))


def _refuse_unsafe(problem: str | None) -> None:
    if problem is not None:
        raise AdminError("unsafe_change", problem, 409)


async def remove_member(node: Node, member: Any, *, force: bool = False) -> None:
    """Remove ``member``; unless ``force``, refused (``unsafe_change``) when the cluster
    would lose its quorum (:mod:`.reconfig_check`)."""
    member_id = check_name(str(member) if isinstance(member, int) else member, "id")
    if member_id not in node.driver.replica.engine.members and node.view.address(
            member_id) is None:  # a former member's address left behind is forgotten
        raise AdminError("not_found", f"node {member_id} is not a member", 404)
    if node.is_leader and not force and member_id in node.driver.replica.engine.members:
        _refuse_unsafe(removing_problem(node, member_id))
    if member_id == node.node_id and node.is_leader and len(
            node.driver.replica.engine.members) > 1:
        await _hand_over_to_be_removed(node)
    await _membership(node, node.remove_member(member_id))


async def _hand_over_to_be_removed(node: Node) -> None:
    """A leader cannot remove itself: hand leadership to the most caught-up follower, then
    answer ``not_leader`` naming it (the CLI asks it). Membership is left unchanged."""
    try:
        leader = await node.transfer_leadership()
    except (LazilyQueueError, TimeoutError) as exc:
        raise AdminError("refused", f"node {node.node_id} leads the cluster and cannot remove "
                         f"itself, and handing leadership over failed ({exc}); nothing was "
                         "changed: transfer leadership, then remove it on the new leader",
                         409) from None
    raise AdminError("not_leader", f"node {node.node_id} handed leadership to node {leader} "
                     "so that it can be removed; membership changes are made on the leader: "
                     f"ask node {leader}", 409, **_leader_hint(node))


async def transfer_leadership(node: Node, to: Any = None) -> str:
    """Hand leadership to ``to`` (or the most caught-up follower); returns the new leader."""
    target = None if to is None else check_name(str(to) if isinstance(to, int) else to, "to")
    if target is not None and target not in node.driver.replica.engine.members:
        raise AdminError("not_found", f"node {target} is not a member", 404)
    if target is not None and target == node.leader_id:
        raise AdminError("refused", f"node {target} already leads", 409)
    if not node.is_leader:
        raise _not_leader(node, "leadership transfers")
    if target is not None and target not in node.driver.replica.engine.connected:
        raise AdminError("refused", f"node {target} is unreachable from the leader, node "
                         f"{node.node_id}, so it cannot take over; nothing was changed: "
                         "start it, or pick a reachable member", 409)
    try:
        return await node.transfer_leadership(target)
    except (LazilyQueueError, TimeoutError) as exc:
        raise _refused(exc) from None


async def _membership(node: Node, change: Any) -> None:
    if not node.is_leader:
        change.close()
        raise _not_leader(node, "membership changes")
    try:
        await change
    except (LazilyQueueError, TimeoutError) as exc:
        raise _refused(exc) from None
