"""The cluster's note of the proposals clients wait on: keyed so that one proposal's
entry is never taken for another's (a proposal orphaned by its replica has its
completion callback cleared; were the entry keyed by that callback's ``id()``, a new
callback could be born at the freed address and overwrite it)."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from lazily_queue.raft.proposals import Proposal
from simulator.client import Client, Observed
from simulator.cluster import Cluster
from simulator.scenario import generate


class _Waiter(Client):
    def __init__(self, cid: str, cluster: Cluster) -> None:
        super().__init__(cid, cluster, random.Random(0))
        self.lost_ops: list[Observed] = []

    def lost(self, obs: Observed) -> None:
        self.lost_ops.append(obs)


class _Completion:
    """A completion callback (a small object: a freed one's address is soon reused)."""

    __slots__ = ()

    def __call__(self, result: Any, error: BaseException | None) -> None:
        return None


def test_an_orphaned_proposal_keeps_its_entry_when_a_new_callback_takes_its_address() -> None:
    c = Cluster(generate(0))
    c.start_node("1")
    first, second = _Waiter("a", c), _Waiter("b", c)
    obs1 = Observed("a", "1", 0, 1, 0, [], 0.0)
    obs2 = Observed("b", "1", 0, 2, 0, [], 0.0)
    done: Callable[[Any, BaseException | None], None] = _Completion()
    p1 = Proposal(1, 0, [], b"", 10.0, done, None)
    c.track("1", first, obs1, p1)
    p1.on_done = None  # the replica orphaned it: its caller went away
    del done
    # Freed, the first callback's address goes to the next one of its size.
    later = _Completion()
    p2 = Proposal(2, 0, [], b"", 10.0, later, None)
    c.track("1", second, obs2, p2)
    c.crash_node("1")
    assert first.lost_ops == [obs1] and second.lost_ops == [obs2]
