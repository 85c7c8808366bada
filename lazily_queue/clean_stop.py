"""What a member does first when it stops cleanly (:meth:`Node.stop` with ``hand_over``).

:func:`say_goodbye` tells each linked peer that it is stopping (:mod:`.raft.goodbye`), so
they log its stop at INFO rather than warn of a lost member; :func:`hand_over_leadership`
then, on the leader, hands leadership to the most caught-up linked follower (as
``lazily-queue members transfer`` does), for at most :data:`HANDOVER_WAIT` seconds, so the
cluster does not wait an election timeout without a leader. When no follower is linked,
there is no quorum or the transfer does not finish in time, the member stops without it
and says why at INFO.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from . import membership
from .errors import LazilyQueueError
from .link_trouble import said_stopping

if TYPE_CHECKING:
    from .node import Node

log = logging.getLogger(__name__)

#: Seconds a stopping leader tries to hand leadership over before it stops anyway.
HANDOVER_WAIT = 2.0


def say_goodbye(node: Node) -> list[str]:
    """Tell the linked peers that announced the feature that ``node`` is stopping; the
    peers told (none when its network has no goodbye)."""
    network = node.driver.network
    say = getattr(network, "say_goodbye", None)
    if say is None:
        return []
    try:
        told: list[str] = say()
    except Exception as exc:  # the stop goes on: the peers then log a lost link
        log.info("node %s: could not tell its peers it is stopping: %r", node.node_id, exc)
        return []
    if told:
        log.debug("node %s: told %s that it is stopping", node.node_id, ", ".join(told))
    return told


async def hand_over_leadership(node: Node, wait: float = HANDOVER_WAIT) -> str | None:
    """On the leader: hand leadership to the most caught-up linked follower that is not
    stopping too, within ``wait`` seconds; the new leader's id, or None (not the leader,
    or not handed over: logged at INFO with why)."""
    if not node.is_leader:
        return None
    engine = node.driver.replica.engine
    members = set(engine.members)
    if members == {node.node_id}:
        return None
    linked = (set(engine.connected) & members) - {node.node_id}
    candidates = {m for m in linked if not said_stopping(node, m)}
    why, leader = None, None
    if not linked:
        why = "no follower is linked"
    elif 2 * (len(linked) + 1) <= len(members):
        why = f"no quorum: {len(linked) + 1} of {len(members)} members are linked"
    elif not candidates:
        why = "every linked follower is stopping too"
    else:
        matched = engine.match_index
        target = max(sorted(candidates), key=lambda m: matched.get(m, 0))
        try:
            leader = await _transfer(node, target, wait)
        except (LazilyQueueError, TimeoutError) as exc:
            why = str(exc) or "no follower caught up in time"
        except Exception as exc:  # the stop goes on whatever the transfer met
            why = f"the transfer failed: {exc!r}"
    if leader is None:
        log.info("node %s: stopping without handing leadership over: %s", node.node_id, why,
                 extra={"event": "leadership_kept", "node": node.node_id, "reason": why})
        return None
    log.info("node %s: leadership handed to node %s before stopping", node.node_id, leader,
             extra={"event": "leadership_handed", "node": node.node_id, "leader": leader})
    return leader


async def _transfer(node: Node, target: str, wait: float) -> str:
    """Hand leadership to ``target``; given up as soon as it stops or unlinks too."""
    engine = node.driver.replica.engine
    moving = asyncio.ensure_future(membership.transfer_leadership(node, target, wait))
    try:
        async with asyncio.timeout(wait + 1.0):
            while not moving.done():
                if said_stopping(node, target) or target not in engine.connected:
                    raise TimeoutError(f"node {target} is stopping or unlinked too")
                step = asyncio.ensure_future(node.driver.next_step())
                await asyncio.wait({moving, step}, return_when=asyncio.FIRST_COMPLETED)
                step.cancel()
        return moving.result()
    finally:
        moving.cancel()
