"""Client ops under their own sessions, the op tap and per-object capture for mirrors."""

from __future__ import annotations

import random
from typing import Any

import pytest

from lazily_queue.raft.batch import encode_command
from lazily_queue.replicated import objects, ops
from lazily_queue.replicated import state_machine as sm_module
from lazily_queue.replicated.client_sessions import new_session_id, owner_of, owner_tag
from lazily_queue.replicated.events import OpApplied
from lazily_queue.replicated.ops import OpError
from lazily_queue.replicated.state_machine import CLIENT_SESSION_BASE, StateMachine

CLIENT = CLIENT_SESSION_BASE + 77


def _apply(sm: StateMachine, member_session: int, *op_list: list[Any],
           stamp: int = 1_000) -> list[Any]:
    ops_with_seq = [[i + 1, *op] for i, op in enumerate(op_list)]
    result = sm.apply(encode_command(member_session, 0, ops_with_seq), stamp)
    assert isinstance(result, list)
    return result


def client_op(seq: int, floor: int, code: int, *args: Any, session: int = CLIENT) -> list[Any]:
    return [ops.CLIENT_OP, session, seq, floor, code, *args]


def test_a_client_op_retried_through_another_member_applies_once() -> None:
    sm = StateMachine()
    _apply(sm, 5, [ops.QUEUE_DECLARE, "q", None])
    first = _apply(sm, 6, client_op(1, 1, ops.QUEUE_PUSH, "q", "a"),
                   client_op(2, 1, ops.QUEUE_POP, "q"))
    assert first == [None, "a"]
    # the same ops, proposed by another member (another member session)
    again = _apply(sm, 7, client_op(1, 1, ops.QUEUE_PUSH, "q", "a"),
                   client_op(2, 1, ops.QUEUE_POP, "q"))
    assert again == [None, "a"]  # the recorded results, nothing applied again
    queue = sm.queues["q"]
    assert queue.len() == 0 and sm.duplicate_ops == 2
    # once the client's floor passed them, they are forgotten and refused as duplicates
    _apply(sm, 8, client_op(3, 3, ops.QUEUE_PUSH, "q", "b"))
    assert sorted(sm.sessions[CLIENT].done) == [3]
    assert _apply(sm, 9, client_op(1, 3, ops.QUEUE_PUSH, "q", "a")) == [
        OpError("duplicate", "already applied")]
    assert queue.elements() == ["b"]


def test_a_seq_applied_again_as_another_op_is_refused_not_answered_with_the_first() -> None:
    sm = StateMachine()
    _apply(sm, 5, [ops.QUEUE_DECLARE, "mine", None], [ops.QUEUE_DECLARE, "theirs", None],
           [ops.QUEUE_PUSH, "mine", "m"], [ops.QUEUE_PUSH, "theirs", "t"])
    popped = [["m"], [[0, 1, 1_000]]]
    assert _apply(sm, 6, client_op(1, 1, ops.QUEUE_POP_STAMPED, "mine", 1)) == [popped]
    # the same seq through another member, as a pop of another queue: not mine's values
    # as if popped from "theirs" (a member would let the client give them back there)
    [reused] = _apply(sm, 7, client_op(1, 1, ops.QUEUE_POP_STAMPED, "theirs", 1))
    assert isinstance(reused, OpError) and reused.code == "seq_reused"
    assert sm.queues["theirs"].elements() == ["t"]
    [retried] = _apply(sm, 8, [ops.CLIENT_OPS, CLIENT, 1, [1, ops.QUEUE_POP_STAMPED, "mine", 1]])
    assert retried == [popped]  # a retry of the op itself still gets its kept result
    # an op answered with no list (a push's None) keeps no more than its result
    assert _apply(sm, 9, client_op(2, 1, ops.QUEUE_PUSH, "mine", "n")) == [None]
    assert _apply(sm, 10, client_op(2, 1, ops.QUEUE_PUSH, "theirs", "x")) == [None]
    assert sm.queues["theirs"].elements() == ["t"]
    # restored from a snapshot, a replica no longer knows which op a kept result was
    restored = StateMachine()
    restored.restore(sm.capture())
    assert _apply(restored, 11, client_op(1, 1, ops.QUEUE_POP_STAMPED, "theirs", 1)) == [
        popped]
    assert restored.queues["theirs"].elements() == ["t"]


def test_client_ops_proposed_together_apply_each_once_as_alone() -> None:
    sm = StateMachine()
    _apply(sm, 5, [ops.QUEUE_DECLARE, "q", None])
    [first] = _apply(sm, 6, [ops.CLIENT_OPS, CLIENT, 1, [1, ops.QUEUE_PUSH, "q", "a"],
                             [2, ops.QUEUE_PUSH, "q", "b"], [3, ops.QUEUE_POP, "q"]])
    assert first == [None, None, "a"]
    # seq 2 retried alone through another member, then 2 and 4 together: 2 is not
    # applied again, 4 is
    assert _apply(sm, 7, client_op(2, 1, ops.QUEUE_PUSH, "q", "b")) == [None]
    [again] = _apply(sm, 8, [ops.CLIENT_OPS, CLIENT, 2, [2, ops.QUEUE_PUSH, "q", "b"],
                             [4, ops.QUEUE_PUSH, "q", "c"]])
    assert again == [None, None]
    assert sm.queues["q"].elements() == ["b", "c"] and sm.duplicate_ops == 2
    for k, bad in enumerate([[ops.CLIENT_OPS, CLIENT, 1],  # no op
                             [ops.CLIENT_OPS, CLIENT, 1, [5]],  # no code
                             [ops.CLIENT_OPS, CLIENT, True, [5, ops.QUEUE_PUSH, "q", 1]]]):
        [result] = _apply(sm, 100 + k, bad)
        assert isinstance(result, OpError) and result.code == "malformed_client_ops", bad
    [nested] = _apply(sm, 200, [ops.CLIENT_OPS, CLIENT, 1,
                                [6, ops.CLIENT_OPS, CLIENT, 1, [7, ops.QUEUE_PUSH, "q", 1]]])
    assert isinstance(nested[0], OpError) and nested[0].code == "malformed_client_op"
    assert sm.queues["q"].elements() == ["b", "c"]


class _SessionModel:
    """What a client op does to its session, op by op (the module docstring's rules),
    with the ops themselves applied by a plain state machine; refusals by code only."""

    def __init__(self) -> None:
        self.sessions: dict[int, list[Any]] = {}  # sid -> [floor, done, seen], by last seen
        self.plain = StateMachine()
        self.duplicates = 0
        #: (sid, seq) -> (code, first argument) of the ops applied since the last restore
        self.applied_as: dict[tuple[int, int], tuple[int, Any]] = {}

    def restored(self) -> None:
        """A restore from a snapshot: which op each kept result was is not in it."""
        self.applied_as.clear()

    def op(self, now: int, sid: int, seq: Any, floor: int, code: Any, args: list[Any]) -> Any:
        if (type(seq) is not int or type(code) is not int or sid <= CLIENT_SESSION_BASE
                or seq < 1 or code in (ops.CLIENT_OP, ops.CLIENT_OPS)):
            return OpError("malformed_client_op", "")
        session = self.sessions.pop(sid, None) or [0, {}, 0]
        self.sessions[sid] = session
        session[2] = now
        if seq in session[1] or seq < session[0]:
            self.duplicates += 1
            was = self.applied_as.get((sid, seq))
            if seq in session[1] and was is not None and was != (code, args[0]):
                return OpError("seq_reused", "")
            return session[1].get(seq, OpError("duplicate", ""))
        if floor > session[0]:
            session[0] = floor
            session[1] = {s: r for s, r in session[1].items() if s >= floor}
        if seq >= session[0] + sm_module.CLIENT_WINDOW:
            return OpError("session_window", "")
        self.plain.now = now
        session[1][seq] = result = self.plain.apply_plain(code, args)
        if type(result) is list:
            self.applied_as[(sid, seq)] = (code, args[0])
        return result


def test_client_ops_apply_by_the_session_rules_alone_and_together() -> None:
    """Random client ops (repeats, seqs below a rising floor, malformed ones, a member's
    session id), as CLIENT_OP and as CLIENT_OPS of one to five, across restores from
    snapshots: each answers, and leaves its session (order, floor, last seen, kept
    results) and the queue, as the rules do."""
    rng = random.Random(7)
    model = _SessionModel()
    sm = StateMachine()
    for target in (sm, model.plain):
        _apply(target, 5, [ops.QUEUE_DECLARE, "q", None])
    duplicates = 0
    for k in range(800):
        sid = rng.choice([CLIENT, CLIENT + 1, CLIENT + 2, 9])
        base = k // 8
        floor = rng.randrange(max(0, base - 3), base + 3)
        batch: list[Any] = []
        for _ in range(rng.randrange(1, 6)):
            seq: Any = rng.choice([rng.randrange(base - 4, base + 8)] * 6 + [True, "7"])
            code: Any = rng.choice([ops.QUEUE_PUSH] * 6 + [ops.QUEUE_POP, ops.CLIENT_OP, "2"])
            batch.append([seq, code, "q", f"v{k}"] if code != ops.QUEUE_POP else [seq, code, "q"])
        stamp = 1_000 + k
        if k % 97 == 96:  # restarted from a snapshot now and then
            restored = StateMachine()
            restored.restore(sm.capture())
            duplicates += sm.duplicate_ops
            sm = restored
            model.restored()
        if k % 2:
            [got] = _apply(sm, 100 + k, [ops.CLIENT_OPS, sid, floor, *batch], stamp=stamp)
        else:
            got = _apply(sm, 100 + k, *[[ops.CLIENT_OP, sid, op[0], floor, *op[1:]]
                                        for op in batch], stamp=stamp)
        expected = [model.op(stamp, sid, op[0], floor, op[1], op[2:]) for op in batch]
        assert [r.code if isinstance(r, OpError) else r for r in got] == [
            r.code if isinstance(r, OpError) else r for r in expected], (k, batch)
        assert [(sid, s.floor, s.seen, s.done) for sid, s in sm.sessions.items()
                if sid > CLIENT_SESSION_BASE] == [
            (sid, s[0], s[2], s[1]) for sid, s in model.sessions.items()], (k, batch)
    assert duplicates + sm.duplicate_ops == model.duplicates > 0
    assert sm.queues["q"].elements() == model.plain.queues["q"].elements()


def test_the_window_bounds_a_session_and_malformed_client_ops_are_refused() -> None:
    sm = StateMachine()
    _apply(sm, 5, [ops.QUEUE_DECLARE, "q", None])
    far = sm_module.CLIENT_WINDOW + 1
    [result] = _apply(sm, 6, client_op(far, 1, ops.QUEUE_PUSH, "q", "x"))
    assert isinstance(result, OpError) and result.code == "session_window"
    assert sm.queues["q"].len() == 0
    for k, bad in enumerate([[ops.CLIENT_OP, 5, 1, 1, ops.QUEUE_PUSH, "q", 1],  # member's id
                [ops.CLIENT_OP, CLIENT, 0, 1, ops.QUEUE_PUSH, "q", 1],  # seq 0
                [ops.CLIENT_OP, CLIENT, 1, 1, ops.CLIENT_OP, CLIENT, 2, 1],  # nested
                [ops.CLIENT_OP, CLIENT, True, 1, ops.QUEUE_PUSH, "q", 1],
                [ops.CLIENT_OP, CLIENT]]):
        [result] = _apply(sm, 100 + k, bad)
        assert isinstance(result, OpError) and result.code == "malformed_client_op", bad
    assert sm.queues["q"].len() == 0


def test_client_sessions_are_bounded_and_survive_a_snapshot(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sm_module, "MAX_CLIENT_SESSIONS", 2)
    sm = StateMachine()
    _apply(sm, 5, [ops.QUEUE_DECLARE, "q", None])
    for k, stamp in ((1, 10), (2, 20), (3, 30)):
        sm.apply(encode_command(6, 0, [[k, *client_op(
            1, 1, ops.QUEUE_PUSH, "q", k, session=CLIENT + k)]]), stamp)
    clients = sorted(s for s in sm.sessions if s > CLIENT_SESSION_BASE)
    assert clients == [CLIENT + 2, CLIENT + 3]  # the least recently seen went first
    assert 5 in sm.sessions and 6 in sm.sessions  # member sessions are not counted
    copy = StateMachine()
    copy.restore(sm.capture())
    assert copy.apply(encode_command(7, 0, [[1, *client_op(
        1, 1, ops.QUEUE_PUSH, "q", 3, session=CLIENT + 3)]]), 40) == [None]
    assert copy.queues["q"].elements() == [1, 2, 3]  # deduplicated after the restore


def test_the_tap_reports_applied_ops_and_a_mirror_replays_them() -> None:
    member = StateMachine()
    _apply(member, 5, [ops.WORK_DECLARE, "w", 30_000, 3], [ops.WORK_PUSH, "w", "before"])
    member.tap = {("work_queue", "w")}
    mirror = StateMachine()
    objects.install(mirror, "work_queue", "w", objects.capture(member, "work_queue", "w"))
    member.drain_events()
    _apply(member, 6, client_op(1, 1, ops.WORK_PUSH, "w", "job"),
           [ops.WORK_CLAIM, "w", "worker", None], [ops.WORK_ACK, "w", "worker", 1],
           stamp=5_000)
    tapped = [e for e in member.drain_events() if isinstance(e, OpApplied)]
    assert [e.index for e in tapped] == [1, 2, 3]
    assert tapped[0].op == [ops.WORK_PUSH, "w", "job"] and tapped[1].now == 5_000
    for event in tapped:
        mirror.replay(event.now, event.op)
    assert objects.capture(mirror, "work_queue", "w") == objects.capture(
        member, "work_queue", "w")
    assert mirror.work_queues["w"].core.pending_len() == 1
    _apply(member, 7, [ops.WORK_DECLARE, "other", 30_000, 3], [ops.WORK_PUSH, "other", 1],
           [ops.QUEUE_DECLARE, "w", None], [ops.QUEUE_PUSH, "w", 1])
    assert not [e for e in member.drain_events() if isinstance(e, OpApplied)]


@pytest.mark.parametrize("kind", objects.KINDS)
def test_an_object_captured_installs_identically_and_none_removes_it(kind: str) -> None:
    sm = StateMachine()
    _apply(sm, 5, [ops.QUEUE_DECLARE, "o", 3], [ops.QUEUE_PUSH, "o", 1], [ops.QUEUE_CLOSE, "o"],
           [ops.TOPIC_DECLARE, "o"], [ops.TOPIC_SUBSCRIBE, "o", "s", "durable"],
           [ops.TOPIC_PUBLISH, "o", "x"], [ops.WORK_DECLARE, "o", 1_000, 2],
           [ops.WORK_PUSH, "o", "j"], [ops.WORK_CLAIM, "o", "w", None])
    doc = objects.capture(sm, kind, "o")
    assert doc is not None
    mirror = StateMachine()
    objects.install(mirror, kind, "o", doc)
    assert objects.capture(mirror, kind, "o") == doc
    objects.install(mirror, kind, "o", None)
    assert objects.capture(mirror, kind, "o") is None
    assert objects.capture(sm, kind, "missing") is None
    with pytest.raises(ValueError, match="unknown kind"):
        objects.capture(sm, "bucket", "o")


def test_a_snapshot_keeps_the_refusals_of_client_ops_proposed_together() -> None:
    from lazily_queue.raft.snapshot import decode_snapshot, encode_snapshot

    sm = StateMachine()
    _apply(sm, 5, [ops.QUEUE_DECLARE, "q", 1])
    [results] = _apply(sm, 6, [ops.CLIENT_OPS, CLIENT, 1, [1, ops.QUEUE_PUSH, "q", "a"],
                               [2, ops.QUEUE_PUSH, "q", "b"], [3, ops.QUEUE_POP, "q"],
                               [4, ops.QUEUE_POP, "q"]])
    assert [type(r).__name__ for r in results] == [
        "NoneType", "QueuePushError", "str", "QueuePopError"]
    doc = {"format": 1, "state": sm.capture(), "last": (b"x", 2, 1), "prev": (b"x", 1, 1),
           "members": ["1"]}
    copy = StateMachine()
    copy.restore(decode_snapshot(encode_snapshot(doc))["state"])
    # the member's retry of the whole group gets the recorded results back
    assert _apply(copy, 6, [ops.CLIENT_OPS, CLIENT, 1, [1, ops.QUEUE_PUSH, "q", "a"],
                            [2, ops.QUEUE_PUSH, "q", "b"], [3, ops.QUEUE_POP, "q"],
                            [4, ops.QUEUE_POP, "q"]]) == [results]
    assert copy.queues["q"].elements() == []


def test_a_client_opening_sessions_without_end_only_drops_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The table is full: the client holding the most sessions gives up its least
    recently seen one, so another client's retry still finds its recorded result."""
    monkeypatch.setattr(sm_module, "MAX_CLIENT_SESSIONS", 8)
    sm = StateMachine()
    _apply(sm, 5, [ops.QUEUE_DECLARE, "q", None])
    victim = new_session_id("web")
    assert _apply(sm, 6, client_op(1, 1, ops.QUEUE_PUSH, "q", "once", session=victim),
                  stamp=2_000) == [None]
    attacker = [new_session_id("greedy") for _ in range(40)]
    for k, sid in enumerate(attacker):  # each one seen after the victim
        _apply(sm, 100 + k, client_op(1, 1, ops.QUEUE_PUSH, "q", k, session=sid),
               stamp=3_000 + k)
    kept = [s for s in sm.sessions if s > CLIENT_SESSION_BASE]
    assert len(kept) == 8 and victim in kept
    assert kept[1:] == attacker[-7:]  # the attacker's least recently seen went
    assert _apply(sm, 7, client_op(1, 1, ops.QUEUE_PUSH, "q", "once", session=victim),
                  stamp=9_000) == [None]  # the retry: its recorded result
    assert sm.queues["q"].elements().count("once") == 1


def test_owner_counts_follow_expiry_and_snapshots(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sm_module, "MAX_CLIENT_SESSIONS", 4)
    sm = StateMachine()
    _apply(sm, 5, [ops.QUEUE_DECLARE, "q", None])
    old = [new_session_id("a") for _ in range(3)]
    for k, sid in enumerate(old):
        _apply(sm, 100 + k, client_op(1, 1, ops.QUEUE_PUSH, "q", 1, session=sid), stamp=1_000)
    later = sm_module.SESSION_TTL_MS + 2_000  # the three expire at the next batch
    b = new_session_id("b")
    _apply(sm, 6, client_op(1, 1, ops.QUEUE_PUSH, "q", 2, session=b), stamp=later)
    assert [s for s in sm.sessions if s > CLIENT_SESSION_BASE] == [b]
    copy = StateMachine()
    copy.restore(sm.capture())
    for machine in (sm, copy):  # counted alike: b's session stays while "a" opens four
        for k in range(4):
            _apply(machine, 200 + k, client_op(1, 1, ops.QUEUE_PUSH, "q", 3,
                                               session=new_session_id("a")), stamp=later + 1 + k)
        kept = [s for s in machine.sessions if s > CLIENT_SESSION_BASE]
        assert b in kept and len(kept) == 4


def test_a_session_id_carries_its_clients_tag() -> None:
    sid = new_session_id("web")
    assert CLIENT_SESSION_BASE < sid < 2**63
    assert owner_of(sid) == owner_tag("web") != owner_tag("greedy")
    assert len({new_session_id("web") for _ in range(100)}) == 100
