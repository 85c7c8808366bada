"""Membership changes of a running node: add or remove a member, transfer leadership.

One change at a time, through the leader. The engine answers each request with an
:class:`~lazily_queue.raft.outcome.Outcome`; transient refusals (no leader yet, a
leader change, a change still in flight) are retried until the deadline, the others
raise :class:`~lazily_queue.errors.InvalidConfiguration` naming the outcome.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from .errors import InvalidConfiguration, LazilyQueueError
from .member_checks import LOOKUP_WITHIN, addition_problem
from .raft.outcome import MAYBE_APPLIED, RETRYABLE, Answer, Outcome
from .replicated import ops
from .storage.replicated_object import raise_op_error

if TYPE_CHECKING:
    from .node import Node

log = logging.getLogger(__name__)

#: Pause between attempts after a transient refusal (seconds).
RETRY_PAUSE = 0.05
#: Shortest time given to forgetting a removed member's address (seconds).
FORGET_TIME = 1.0


async def add_member(node: Node, member: str, address: str | None, timeout: float) -> None:
    """Add ``member`` at ``address`` (:func:`add_checked`) once it passes the checks of
    :func:`~lazily_queue.member_checks.addition_problem`; raises
    :class:`InvalidConfiguration` saying why it does not, with nothing changed."""
    problem = await addition_problem(node, member, address, min(timeout, LOOKUP_WITHIN))
    if problem is not None:
        raise InvalidConfiguration(problem)
    await add_checked(node, member, address, timeout)


async def add_checked(node: Node, member: str, address: str | None, timeout: float) -> None:
    """Replicate ``address`` (when given), then add ``member`` to the cluster.

    All or nothing: when the engine refuses the change, the member's address record is
    put back as it was before the call. Only a change that may still commit (a
    :class:`TimeoutError`, or an attempt answered with an outcome in ``MAYBE_APPLIED``
    or an unrecognised one) keeps the new address, which the member needs if it does.
    """
    engine = node.driver.replica.engine
    if member in engine.members:
        raise InvalidConfiguration(f"node {member} is already a member")
    await node.barrier(timeout=timeout)  # a quorum answers, and the view is current
    previous = node.view.address(member)
    replicated = address is not None and address != previous
    if replicated:
        raise_op_error(
            await node.driver.call(ops.MEMBER_ADDRESS, [member, address], timeout=timeout)
        )
    outcomes: list[Outcome] = []
    try:
        await _change(node, lambda answer: node.driver.replica.engine.add_member(member, answer),
                      f"adding node {member}", timeout, outcomes)
    except InvalidConfiguration as refused:
        if not replicated:
            raise
        if _may_still_commit(outcomes):
            raise InvalidConfiguration(
                f"{refused}; the engine's answers ({', '.join(o.value for o in outcomes)}) "
                f"say it may still commit, so node {member}'s address stays replicated: "
                "check the members before adding it again") from None
        await _restore_address(node, member, previous, timeout, refused)
        raise InvalidConfiguration(f"{refused}; nothing was changed, so adding it again "
                                   "is safe") from None


def _may_still_commit(outcomes: list[Outcome]) -> bool:
    """Whether a change answered ``outcomes``, then refused, may commit after all."""
    return any(o in MAYBE_APPLIED or o is Outcome.UNRECOGNISED for o in outcomes)


async def _restore_address(node: Node, member: str, previous: str | None, timeout: float,
                           refused: InvalidConfiguration) -> None:
    """Put ``member``'s address record back to ``previous`` after a refused addition."""
    op, args = ((ops.MEMBER_FORGET, [member]) if previous is None
                else (ops.MEMBER_ADDRESS, [member, previous]))
    try:
        raise_op_error(await node.driver.call(op, args, timeout=timeout))
    except (LazilyQueueError, TimeoutError) as exc:
        raise InvalidConfiguration(
            f"{refused}; withdrawing the address just replicated for node {member} failed "
            f"too ({exc or type(exc).__name__}): no member dials a node that is not a "
            "member, and adding it again replaces that address"
        ) from None


async def remove_member(node: Node, member: str, timeout: float) -> None:
    """Remove ``member``, then forget its replicated address.

    The address is only forgotten once the removal has committed: a removal that may
    still commit (a :class:`TimeoutError`, an outcome in ``MAYBE_APPLIED`` or an
    unrecognised one) keeps it and says so. A forget that fails after the removal
    committed is logged, not raised: the removal is done, and removing the node again
    forgets the address left behind (a node that is not a member but still has one).
    A node cannot remove itself: that raises :class:`InvalidConfiguration` at once, naming
    the member to ask instead (:func:`lazily_queue.admin.remove_member` hands a leader's
    leadership over first).
    """
    deadline = time.monotonic() + timeout
    members = node.driver.replica.engine.members
    address = node.view.address(member)
    if member not in members:
        if address is None:
            raise InvalidConfiguration(f"node {member} is not a member")
        raise_op_error(await node.driver.call(ops.MEMBER_FORGET, [member, address],
                                              timeout=timeout))
        return
    if members == [member]:
        raise InvalidConfiguration(f"node {member} is the cluster's only member and cannot be "
                                   "removed; stop it instead")
    if member == node.node_id:
        raise InvalidConfiguration(_self_removal(node))
    kept = (f"node {member}'s address stays replicated: check the members, and once it is "
            "gone remove it again to forget the address")
    outcomes: list[Outcome] = []
    try:
        await _change(node, lambda answer: node.driver.replica.engine.remove_member(member, answer),
                      f"removing node {member}", timeout, outcomes)
    except TimeoutError as late:
        raise TimeoutError(f"{late}; {kept}") from None
    except InvalidConfiguration as refused:
        if not _may_still_commit(outcomes):
            raise InvalidConfiguration(f"{refused}; nothing was changed: node {member} is "
                                       "still a member") from None
        raise InvalidConfiguration(
            f"{refused}; the engine's answers ({', '.join(o.value for o in outcomes)}) "
            f"say it may still commit, so {kept}") from None
    if address is not None:
        await _forget(node, member, address,
                      max(deadline - time.monotonic(), min(timeout, FORGET_TIME)))


def _self_removal(node: Node) -> str:
    """Why ``node`` cannot remove itself (the engine refuses it), and what to do instead."""
    me = node.node_id
    if node.is_leader:
        return (f"node {me} leads the cluster and cannot remove itself; nothing was changed: "
                "transfer leadership first (`lazily-queue members transfer`, "
                f"Node.transfer_leadership()), then remove node {me} on the new leader")
    leader = node.leader_id
    return (f"node {me} cannot remove itself; nothing was changed: remove it on the leader"
            + ("" if leader is None else f", node {leader}"))


async def _forget(node: Node, member: str, address: str, timeout: float) -> None:
    """Drop the address record of ``member``, removed already, while it still holds
    ``address`` (a later ``add_member`` may have replicated another); a failure is
    logged."""
    try:
        raise_op_error(await node.driver.call(ops.MEMBER_FORGET, [member, address],
                                              timeout=timeout))
    except (LazilyQueueError, TimeoutError) as exc:
        log.warning("node %s: node %s was removed, but forgetting its address failed (%s); "
                    "remove it again to forget it", node.node_id, member,
                    exc or type(exc).__name__)


async def transfer_leadership(node: Node, target: str | None, timeout: float) -> str:
    """On the leader: hand leadership to ``target`` (or the most caught-up follower) and
    return the new leader's id once this node sees it."""
    if not node.is_leader:
        raise InvalidConfiguration(
            f"node {node.node_id} is not the leader ({node.leader_id} is); call this there"
        )
    others = [m for m in node.driver.replica.engine.members if m != node.node_id]
    if not others or target == node.node_id:
        raise InvalidConfiguration(
            f"node {node.node_id} leads already and "
            + ("has no other member to hand leadership to" if not others
               else "cannot hand leadership to itself"))
    await _change(node, lambda answer: _start_transfer(node, target, answer),
                  "transferring leadership", timeout)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        leader = node.leader_id
        if leader is not None and leader != node.node_id:
            return leader
        await node.driver.next_step()
    raise TimeoutError("leadership did not move before the deadline")


def _start_transfer(node: Node, target: str | None, answer: Answer) -> None:
    """Ask the engine to hand leadership to ``target`` (None: the most caught-up linked
    follower, picked as the engine would); unless it refuses at once, tell the linked
    peers whom in the same turn of the loop, before the target can start its election
    (:mod:`~lazily_queue.raft.transfer_notice`)."""
    engine = node.driver.replica.engine
    if target is None:
        linked, matched = engine.connected - {node.node_id}, engine.match_index
        target = max(linked & set(engine.members), key=lambda m: (matched.get(m, 0), m),
                     default=None)
    refused: list[Outcome] = []

    def answered(result: object, outcome: Outcome) -> None:
        if outcome is not Outcome.SUCCESS:
            refused.append(outcome)
        answer(result, outcome)

    term = engine.term
    engine.transfer_leadership(target, answered)
    tell = getattr(node.driver.network, "tell_transfer", None)
    if target is None or refused or tell is None:
        return
    try:
        told = tell(term, target)
    except Exception as exc:  # the transfer goes on: the peers then warn of a lost leader
        log.info("node %s: could not tell its peers it hands leadership to node %s: %r",
                 node.node_id, target, exc)
        return
    log.debug("node %s: told %s that it hands leadership to node %s", node.node_id,
              ", ".join(told) or "no peer", target)


async def _change(
    node: Node, start: Callable[[Answer], None], what: str, timeout: float,
    outcomes: list[Outcome] | None = None,
) -> None:
    """Ask ``start`` until the engine answers success, retrying transient refusals until
    the deadline; every answer is appended to ``outcomes`` when given."""
    deadline = time.monotonic() + timeout
    while True:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Outcome] = loop.create_future()

        def done(_: object, outcome: Outcome, fut: asyncio.Future[Outcome] = fut) -> None:
            if not fut.done():
                fut.set_result(outcome)

        start(done)
        node.driver.wake()
        remaining = deadline - time.monotonic()
        try:
            outcome = await asyncio.wait_for(fut, max(remaining, 0.01))
        except TimeoutError:
            raise TimeoutError(
                f"{what} did not commit before the deadline; it may still commit (the "
                "leader refuses any other membership change until it has)"
            ) from None
        if outcomes is not None:
            outcomes.append(outcome)
        if outcome is Outcome.SUCCESS:
            return
        transient = outcome in RETRYABLE or outcome is Outcome.REQUEST_DENIED
        if not transient or time.monotonic() > deadline:
            raise InvalidConfiguration(
                f"{what} was refused: {outcome.value} (one membership "
                "change at a time, after the leader's first entry committed)"
            )
        await asyncio.sleep(RETRY_PAUSE)
