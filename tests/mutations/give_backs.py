"""Planted defects in checked give-backs: a consume-only client's give-back applies only
while its session holds its elements as popped and not given back, alike on every
member."""

from __future__ import annotations

from .mutation import Mutation

MUTATIONS = [
    Mutation(
        "give-back-checked-feature-unrequired", "lazily_queue/raft/features.py",
        "EXPIRE_LIMIT_FEATURE,\n                               GIVE_BACK_CHECKED_FEATURE,\n",
        "EXPIRE_LIMIT_FEATURE,\n",
        ("tests/raft/test_mesh_node.py::test_a_member_of_an_older_version_is_refused_at_the"
         "_handshake",),
        "a member applying a consume-only client's give-back its session no longer holds is "
        "refused at the handshake"),
    Mutation(
        "checked-give-back-unchecked", "lazily_queue/replicated/session_popped.py",
        "        if len(named) == len(found) and all((name, i) in index for i in named):\n",
        "        if True:\n",
        ("tests/replicated/test_checked_give_backs.py::"
         "test_one_element_given_back_twice_applies_once_on_every_replica",),
        "a consume-only client's element given back under two sequence numbers through two "
        "members goes back to the head once"),
    Mutation(
        "checked-give-back-records-kept", "lazily_queue/replicated/session_popped.py",
        "            self.by_session.clear()\n            self.count = self.bytes = 0\n",
        "",
        ("tests/replicated/test_checked_give_backs.py::"
         "test_one_element_given_back_twice_applies_once_on_every_replica",),
        "replicas whose records of popped elements differed (one restored an earlier "
        "version's snapshot) check give-backs alike from the first checked one on"),
    Mutation(
        "popped-checking-not-proposed", "lazily_queue/replicated/proposing.py",
        "        return [] if self.popped.checking else [(POPPED_CHECKING, [])]\n",
        "        return []\n",
        ("tests/client/test_popped_checking_op.py::"
         "test_pops_right_after_the_first_election_can_be_given_back",
         "tests/raft/test_leading_ops.py::"
         "test_a_new_leader_proposes_popped_checking_before_anything_else"),
        "a consume-only client's pops are not forgotten as checking begins, nor by another "
        "session's first checked give-back: a fresh cluster checks from before its first pop"),
    Mutation(
        "popped-checking-not-retried", "lazily_queue/maintenance.py",
        "        due.append((ops.POPPED_CHECKING, []))\n",
        "        pass\n",
        ("tests/replicated/test_checked_give_backs.py::"
         "test_the_leader_proposes_the_popped_checking_op_while_the_state_is_not_checking",),
        "a leader whose first POPPED_CHECKING was lost proposes it again at its maintenance"),
    Mutation(
        "client-give-back-proposed-unchecked", "lazily_queue/client/connection.py",
        "            op.code = CHECKED[code]",
        "            pass",
        ("tests/client/test_client_give_back_processes.py",),
        "a consume-only client's element given back through two members at once goes back "
        "once"),
    Mutation(
        "popped-snapshot-last-copy", "lazily_queue/replicated/session_popped_snapshot.py",
        "        positions.setdefault(i, n)\n",
        "        positions[i] = n\n",
        ("tests/replicated/test_session_popped.py::"
         "test_a_snapshot_restores_an_element_popped_twice_as_its_first_copy",),
        "a snapshot restores a session's pop of two copies of one id as the log noted it: "
        "the first copy, its value what every member's gate checks a give-back against"),
    Mutation(
        "popped-checking-proposed-again", "lazily_queue/raft/leading.py",
        "    return [op for op in ops if op[0] not in logged]\n",
        "    return ops\n",
        ("tests/raft/test_leading_ops.py::"
         "test_a_leader_that_has_not_applied_the_marker_in_its_log_proposes_it_no_more",),
        "a member elected before it applied its log, which holds POPPED_CHECKING, appends no "
        "second one (a no-op entry per such election)"),
    Mutation(
        "pop-of-two-copies-fails", "lazily_queue/replicated/session_popped.py",
        "                if held == seq:  # a second copy (a producer gave it back twice): "
        "held once\n",
        "                if False:\n",
        ("tests/replicated/test_session_popped.py::"
         "test_a_pop_handing_out_one_element_twice_notes_it_once",),
        "a client session's pop taking two copies of one id (a producer gave it back twice) "
        "applies, the element held once in its record"),
]
