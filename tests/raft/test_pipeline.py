"""CommitPipeline: a leader's appends leave before its own journal write; votes and
acknowledgements wait for the fsync covering that write."""

from __future__ import annotations

from typing import Any

from lazily_queue.raft.pipeline import CommitPipeline
from lazily_queue.raft.ready import NOTHING, Ready


def _ready() -> Ready:
    return Ready(messages={
        "2": [{"type": "append_entries", "term": 1}, {"type": "response_vote", "term": 1}],
        "3": [{"type": "next_node_idx", "term": 1}],
    })


def _kinds(ready: Ready) -> dict[str, list[Any]]:
    return {peer: [m["type"] for m in ms] for peer, ms in ready.messages.items()}


def test_appends_are_handed_out_before_the_write_and_the_rest_after_the_fsync() -> None:
    pipeline = CommitPipeline()
    order: list[str] = []

    def write() -> bool:
        order.append("write")
        return True

    def early(ready: Ready) -> None:
        order.append("early")
        assert _kinds(ready) == {"2": ["append_entries"]}

    released, error = pipeline.stepped(_ready(), write, early)
    assert error is None and order == ["early", "write"]
    assert all(not r.messages for r in released)  # the vote and the ack wait
    assert pipeline.start_fsync() is not None
    (after,) = pipeline.fsync_done()
    assert _kinds(after) == {"2": ["response_vote"], "3": ["next_node_idx"]}


def test_a_stalled_pipeline_hands_nothing_out_early() -> None:
    pipeline = CommitPipeline()
    pipeline.failed("the disk is full")
    handed: list[Ready] = []
    pipeline.stepped(_ready(), lambda: True, handed.append)
    assert handed == []


def test_without_early_the_appends_leave_with_the_step() -> None:
    pipeline = CommitPipeline()
    released, _ = pipeline.stepped(_ready(), lambda: True)
    assert [_kinds(r) for r in released] == [{"2": ["append_entries"]}]


def test_a_step_that_produced_nothing_still_counts_its_write() -> None:
    """An empty output releases nothing, but the records its step wrote hold back what a
    later step releases until an fsync covers them; a failed write is reported."""
    pipeline = CommitPipeline()
    assert pipeline.stepped(NOTHING, lambda: True) == ([], None)
    assert not pipeline.idle
    released, _ = pipeline.stepped(_ready(), lambda: False)
    assert [_kinds(r) for r in released] == [{"2": ["append_entries"]}]  # the rest waits
    assert pipeline.start_fsync() is not None
    (after,) = pipeline.fsync_done()
    assert _kinds(after) == {"2": ["response_vote"], "3": ["next_node_idx"]}
    assert pipeline.idle

    def refused() -> bool:
        raise OSError(28, "no space")

    released, error = pipeline.stepped(NOTHING, refused)
    assert released == [] and isinstance(error, OSError)
    assert not pipeline.idle  # what the failed write left must be fsynced again


def test_taking_messages_gives_the_same_whether_all_or_some_are_taken() -> None:
    """Messages all of the kinds asked for move at once; any other mix is picked over."""
    kinds = frozenset({"append_entries", "apply_command_response"})
    mixes = [
        {"2": ["append_entries"], "3": ["append_entries", "apply_command_response"]},
        {"2": ["append_entries"], "3": ["append_entries", "next_node_idx"]},
        {"2": ["next_node_idx"], "3": ["append_entries"]},
        {"2": ["next_node_idx"], "3": ["response_vote"]},
    ]
    for mix in mixes:
        ready = Ready(messages={peer: [{"type": t, "at": i} for i, t in enumerate(types)]
                                for peer, types in mix.items()})
        messages = {peer: list(ms) for peer, ms in ready.messages.items()}
        taken = ready.take_messages(kinds)
        expected = {peer: [m for m in ms if m["type"] in kinds] for peer, ms in messages.items()}
        assert taken.messages == {peer: ms for peer, ms in expected.items() if ms}
        left = {peer: [m for m in ms if m["type"] not in kinds] for peer, ms in messages.items()}
        assert ready.messages == {peer: ms for peer, ms in left.items() if ms}
        assert (taken is NOTHING) == (not any(expected.values()))
