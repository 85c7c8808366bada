"""Repeated acknowledgements a follower leaves out.

A follower answers every AppendEntries with a ``next_node_idx``. When a leader's new
commit index goes out on its own (no append was about to carry it: a client across
the network waits for its answer before it pushes again), the follower's answer repeats
the one it sent a moment before for the entries: same leader, same term, same next
index, success. The answer costs the follower an encoding and a send, the leader a
frame and a step, and says only that the follower is alive.

:class:`RepeatedAcks` leaves out such a repeat when the message answered says the
entries it acknowledges are committed (so the leader needs no answer to commit them,
even if the first one was lost) and the one it repeats went out less than ``window``
seconds ago (a fraction of the heartbeat interval): a leader still hears from every
follower at least once per heartbeat and ``window``, which keeps its majority check
(leader fallback) as it was. A failure or reset, a new index, another leader or term,
and anything after the link to that leader went down or up, is sent. The messages are
unchanged: a leader of any version gets fewer repeats, nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: The window, as a fraction of the heartbeat interval.
WINDOW_OF_HEARTBEAT = 0.1


class RepeatedAcks:
    """Decides which ``next_node_idx`` answers leave (the module docstring says which
    not); ``term()`` is the sender's current term, ``committed()`` the commit index the
    message answered carried, ``clock()`` the time in seconds, and the window
    :data:`WINDOW_OF_HEARTBEAT` of ``heartbeat_interval``."""

    def __init__(self, clock: Callable[[], float], term: Callable[[], int],
                 committed: Callable[[], int], heartbeat_interval: float) -> None:
        self._clock = clock
        self._term = term
        self._committed = committed
        self.window = WINDOW_OF_HEARTBEAT * heartbeat_interval
        #: peer -> (term, next index, when) of the last success sent to it
        self._last: dict[str, tuple[int, int, float]] = {}
        #: Repeats left out so far.
        self.left_out = 0

    def wanted(self, peer: str, message: dict[str, Any]) -> bool:
        """Whether the ``next_node_idx`` ``message`` to ``peer`` is sent (it is recorded)."""
        if not message.get("success") or message.get("reset"):
            self._last.pop(peer, None)  # the success after it is news again
            return True
        term, index, now = self._term(), message["next_node_idx"], self._clock()
        last = self._last.get(peer)
        if (last is not None and last[0] == term and last[1] == index
                and now - last[2] < self.window and self._committed() >= index - 1):
            self.left_out += 1
            return False
        self._last[peer] = (term, index, now)
        return True

    def forget(self, peer: str) -> None:
        """The link to ``peer`` went down or up: its next answer is sent."""
        self._last.pop(peer, None)
