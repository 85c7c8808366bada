"""StateLog: one log line per change of a node's state, for operators and log shippers.

Lines go to the ``lazily_queue.state`` logger with a structured ``event`` (and the
fields named below) in the record, which the JSON log format (``lazily-queue node
--log-format json``) writes out as keys:

* ``leader_elected`` (INFO, ``leader``, ``term``) and ``leader_lost`` (WARNING, ``leader``:
  the member that led, ``term``, and ``target`` for a handover;
  INFO when the leader's link ended: its ``member_lost`` line warns, with the cause;
  INFO ``no leader (node N is handing leadership to node M; term T)`` when the leader
  said it started a leadership transfer, :func:`~.link_trouble.handing_over`, and a
  WARNING ``no leader (node N's handover to node M did not finish; term T)`` when
  still no leader is known a few election timeouts later);
* ``member_lost`` (WARNING, ``member``, ``reason``: why its link ended and what to
  check; the transport logs the broken link itself at DEBUG only; INFO ``member N
  stopped`` when the member said it was stopping before its links closed, a clean
  stop, as ``leader_lost`` is then INFO ``no leader (node N stopped; term T)``) and
  ``member_back`` (INFO, ``member``); a link lost within :data:`SETTLING` seconds of the member's
  first one (two members that dial each other at start keep one of the two links) is
  reported only if it is not back within :data:`SETTLING` seconds; a link the member
  closed in order is reported once the next dial says why (a member that removed this
  node refuses it as a stranger: the line says this node was removed and what to do),
  or after :data:`LOSS_WAIT` seconds;
* ``members_changed`` (INFO, ``members``);
* ``snapshot_taken`` (INFO, ``index``: the first index the log keeps).

The journal's own changes, ``disk_full`` (ERROR, ``reason``) and ``disk_recovered``
(WARNING, ``seconds`` it lasted), are logged by the driver
(``lazily_queue.raft.driver``) with the same structured fields.

The monitor runs one per node; it compares the state after every step, so a change
that comes and goes within one step is not reported.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any

from .background import StepObserver
from .link_trouble import handing_over, handover_window, link_loss, loss_known, said_stopping

if TYPE_CHECKING:
    from .node import Node

log = logging.getLogger("lazily_queue.state")

#: Seconds after a member's first link in which a lost link is given time to come back.
SETTLING = 2.0
#: Most seconds a link closed in order waits for the next dial to say why (see
#: :func:`~.link_trouble.loss_known`) before it is reported.
LOSS_WAIT = 2.0


class StateLog(StepObserver):
    """Watches ``node`` and logs its state changes (see the module docstring)."""

    def __init__(self, node: Node, logger: logging.Logger = log,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.node = node
        self.log = logger
        self._clock = clock
        self._last: dict[str, Any] | None = None
        self._ever_linked: dict[str, float] = {}  # member -> when it was first linked
        self._settling: dict[str, float] = {}  # member -> when its lost link is reported
        self._unexplained: dict[str, float] = {}  # member -> when its loss is reported
        self._shape: tuple[object, ...] | None = None
        #: The handover announced when the leader was lost: (from, to, when it is late).
        self._handover: tuple[str, str, float] | None = None

    def _say(self, level: int, event: str, message: str, **fields: Any) -> None:
        self.log.log(level, "node %s: %s", self.node.node_id, message,
                     extra={"event": event, "node": self.node.node_id, **fields})

    def observe(self) -> None:
        """Compare the node's state with the last one seen and log what changed."""
        driver = self.node.driver
        engine = driver.replica.engine
        moment = self._clock()
        if self._settling:
            self._report_unsettled(moment, set(engine.connected), engine.members)
        if self._unexplained:
            self._report_explained(moment, set(engine.connected), engine.members)
        if self._handover is not None and moment >= self._handover[2]:
            self._report_late_handover(engine.leader_id, engine.term)
        shape = (engine.shape, driver.replica.snapshots.taken)
        if shape == self._shape:
            return  # nothing it logs can have changed
        self._shape = shape
        me = self.node.node_id
        now: dict[str, Any] = {
            "leader": engine.leader_id,
            "term": engine.term,
            "members": sorted(engine.members),
            "linked": set(engine.connected) - {me},
            "snapshots": driver.replica.snapshots.taken,
        }
        last, self._last = self._last, now
        if last is None:
            last = {**now, "leader": None, "linked": set()}
        if now["leader"] is not None:
            self._handover = None
        if now["leader"] is not None and (now["leader"], now["term"]) != (
                last["leader"], last["term"]):
            who = "this node" if now["leader"] == me else f"node {now['leader']}"
            self._say(logging.INFO, "leader_elected", f"leader elected: {who} leads term "
                      f"{now['term']}", leader=now["leader"], term=now["term"])
        elif now["leader"] is None and last["leader"] is not None:
            self._leader_lost(last["leader"], last["term"], now, moment)
        if now["members"] != last["members"]:
            self._say(logging.INFO, "members_changed",
                      f"members now {', '.join(now['members'])}", members=now["members"])
        for member in sorted(last["linked"] - now["linked"]):
            if member not in now["members"]:
                continue
            if moment - self._ever_linked.get(member, -SETTLING) < SETTLING:
                self._settling[member] = moment + SETTLING
            elif not said_stopping(self.node, member) and not loss_known(self.node, member):
                self._unexplained[member] = moment + LOSS_WAIT
            else:
                self._lost(member)
        for member in sorted(now["linked"] - last["linked"]):
            if self._settling.pop(member, None) is not None:
                self.log.debug("node %s: member %s linked again", me, member)
                continue
            again = "back" if member in self._ever_linked else "reachable"
            self._ever_linked.setdefault(member, moment)
            self._say(logging.INFO, "member_back", f"member {member} {again}", member=member)
        if now["snapshots"] > last["snapshots"]:
            first = driver.replica.journal.first_index
            self._say(logging.INFO, "snapshot_taken",
                      f"snapshot taken; the log now starts at index {first}", index=first)

    def _lost(self, member: str) -> None:
        if said_stopping(self.node, member):
            reason = "it said so before closing its links"
            self._say(logging.INFO, "member_lost", f"member {member} stopped ({reason})",
                      member=member, reason=reason)
            return
        reason = link_loss(self.node, member) or "no link"
        self._say(logging.WARNING, "member_lost", f"member {member} lost: {reason}",
                  member=member, reason=reason)

    def _leader_lost(self, gone: str, led: int, now: dict[str, Any], moment: float) -> None:
        """Node ``gone``, leader of term ``led``, leads no longer and no leader is known."""
        me, term = self.node.node_id, now["term"]
        level, fields = logging.INFO, {"leader": gone, "term": term}
        if said_stopping(self.node, gone):
            why = "this node is stopping" if gone == me else f"node {gone} stopped"
        elif gone != me and gone not in now["linked"]:  # member_lost warns, with why
            why = f"node {gone} no longer leads: its link ended"
        elif (target := handing_over(self.node, gone, led)) is not None:
            giver = "this node is" if gone == me else f"node {gone} is"
            taker = "this node" if target == me else f"node {target}"
            why = f"{giver} handing leadership to {taker}"
            fields["target"] = target
            self._handover = (gone, target, moment + handover_window(self.node))
        else:
            level, why = logging.WARNING, f"node {gone} no longer leads"
        self._say(level, "leader_lost", f"no leader ({why}; term {term})", **fields)

    def _report_late_handover(self, leader: str | None, term: int) -> None:
        """A handover announced with the leader's loss is late: warn if still no leader."""
        if self._handover is None:
            return
        (gone, target, _), self._handover = self._handover, None
        if leader is None:
            me = self.node.node_id
            giver = "this node's" if gone == me else f"node {gone}'s"
            taker = "this node" if target == me else f"node {target}"
            self._say(logging.WARNING, "leader_lost", f"no leader ({giver} handover to "
                      f"{taker} did not finish; term {term})", leader=gone, target=target,
                      term=term)

    def _report_unsettled(self, moment: float, linked: set[str],
                           members: Collection[str]) -> None:
        """Report the links lost while settling that did not come back in time."""
        for member, due in sorted(self._settling.items()):
            if member in linked or moment < due:
                continue
            del self._settling[member]
            if member in members:
                self._lost(member)

    def _report_explained(self, moment: float, linked: set[str],
                          members: Collection[str]) -> None:
        """Report the lost links whose cause is known now, linked again (before the line
        saying the member is back) or waited for long enough."""
        for member, due in sorted(self._unexplained.items()):
            if member in linked or moment >= due or loss_known(self.node, member):
                del self._unexplained[member]
                if member in members:
                    self._lost(member)
