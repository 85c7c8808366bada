"""The client chaos harness's partition (:mod:`tests.client.chaos_partition`): the leader
process cut from the two others, with some of its clients, for six seconds, then healed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.client.chaos_partition import run

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


async def test_a_partitioned_leader_loses_nothing_and_its_clients_move_or_are_told_why(
        short_tmp: Path) -> None:
    measures = await run(short_tmp, cut_for=6.0)
    assert measures.acked > 0
    assert (measures.lost, measures.doubled, measures.problems) == (0, 0, 0), measures
    assert measures.majority_leader not in (None, measures.minority), measures
    assert measures.moved and None not in measures.moved.values(), measures
    told = [error for errors in measures.stayed_errors.values() for error in errors
            if "sent no Raft message" in error]
    # a producer kept with the cut leader is told why its writes fail (the others of its
    # errors are its own deadlines, or its links to the majority that go nowhere)
    assert told, measures
    assert all("(a partition)" in error for error in told), told
    assert measures.caught_up_after is not None, measures
