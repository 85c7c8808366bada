"""Refuse a membership change that would leave the cluster without a quorum.

A change takes effect on the leader as soon as it is appended: from then on the new
membership's majority must acknowledge every entry, the change's own included. Adding
a member while another is down (the new one is not linked until it is a member, and
then has to catch up), or removing a reachable member while another is down, leaves
fewer reachable members than the new majority: the cluster accepts no write, and the
change cannot even commit, until the missing members are back. The admin API refuses
such a change unless it is forced, and says what to do instead. With every member
reachable nothing is refused: growing a cluster of one (or two) has no safer way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .node import Node


def quorum_problem(node: Node, members_after: list[str], change: str,
                   *, fix: str) -> str | None:
    """Why the leader ``node`` should not make ``change`` (``None``: it may), given the
    membership ``members_after`` it would have; ``fix`` says what to do instead."""
    engine = node.driver.replica.engine
    reachable = engine.connected | {node.node_id}
    up = [m for m in members_after if m in reachable]
    need = len(members_after) // 2 + 1
    down = [m for m in engine.members if m not in reachable]
    if len(up) >= need or not down:  # with every member up, growing is the only way
        return None
    return (f"{change} would leave the cluster without a quorum: its {len(members_after)} "
            f"members would need {need} reachable and node {node.node_id} reaches "
            f"{len(up)} of them ({', '.join(up) or 'none'}; unreachable: {', '.join(down)}), "
            "so neither writes nor this change would commit until more members are back; "
            f"nothing was changed: {fix}")


def adding_problem(node: Node, member: str) -> str | None:
    """Why adding ``member`` now would cost the cluster its quorum, or ``None``."""
    engine = node.driver.replica.engine
    members = list(engine.members)
    down = [m for m in members if m != node.node_id and m not in engine.connected]
    first = (f"bring node {down[0]} back or remove it first (`lazily-queue members remove "
             f"{down[0]}`), " if down else "")
    return quorum_problem(node, [*members, member], f"adding node {member}",
                          fix=first + f"or repeat with --force once node {member} is running")


def removing_problem(node: Node, member: str) -> str | None:
    """Why removing ``member`` now would cost the cluster its quorum, or ``None``."""
    members = [m for m in node.driver.replica.engine.members if m != member]
    return quorum_problem(node, members, f"removing node {member}",
                          fix="bring the unreachable members back first, or repeat with "
                              "--force")
