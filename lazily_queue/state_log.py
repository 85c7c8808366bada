"""StateLog: one log line per change of a node's state, for operators and log shippers.

Lines go to the ``lazily_queue.state`` logger with a structured ``event`` (and the
fields named below) in the record, which the JSON log format (``lazily-queue node
--log-format json``) writes out as keys:

* ``leader_elected`` (INFO, ``leader``, ``term``) and ``leader_lost`` (WARNING, ``term``);
* ``member_lost`` (WARNING, ``member``) and ``member_back`` (INFO, ``member``);
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
from typing import TYPE_CHECKING, Any

from .background import StepObserver

if TYPE_CHECKING:
    from .node import Node

log = logging.getLogger("lazily_queue.state")


class StateLog(StepObserver):
    """Watches ``node`` and logs its state changes (see the module docstring)."""

    def __init__(self, node: Node, logger: logging.Logger = log) -> None:
        self.node = node
        self.log = logger
        self._last: dict[str, Any] | None = None
        self._ever_linked: set[str] = set()
        self._shape: tuple[object, ...] | None = None


    def _say(self, level: int, event: str, message: str, **fields: Any) -> None:
        self.log.log(level, "node %s: %s", self.node.node_id, message,
                     extra={"event": event, "node": self.node.node_id, **fields})

    def observe(self) -> None:
        """Compare the node's state with the last one seen and log what changed."""
        driver = self.node.driver
        engine = driver.replica.engine
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
        if now["leader"] is not None and (now["leader"], now["term"]) != (
                last["leader"], last["term"]):
            who = "this node" if now["leader"] == me else f"node {now['leader']}"
            self._say(logging.INFO, "leader_elected", f"leader elected: {who} leads term "
                      f"{now['term']}", leader=now["leader"], term=now["term"])
        elif now["leader"] is None and last["leader"] is not None:
            self._say(logging.WARNING, "leader_lost", f"no leader (node {last['leader']} no "
                      f"longer leads; term {now['term']})", term=now["term"])
        if now["members"] != last["members"]:
            self._say(logging.INFO, "members_changed",
                      f"members now {', '.join(now['members'])}", members=now["members"])
        for member in sorted(last["linked"] - now["linked"]):
            if member in now["members"]:
                self._say(logging.WARNING, "member_lost", f"member {member} lost: no link",
                          member=member)
        for member in sorted(now["linked"] - last["linked"]):
            again = "back" if member in self._ever_linked else "reachable"
            self._ever_linked.add(member)
            self._say(logging.INFO, "member_back", f"member {member} {again}", member=member)
        if now["snapshots"] > last["snapshots"]:
            first = driver.replica.journal.first_index
            self._say(logging.INFO, "snapshot_taken",
                      f"snapshot taken; the log now starts at index {first}", index=first)
