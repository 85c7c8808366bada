"""Planted defects in clients and the members serving them (``lazily_queue/client``)."""

from __future__ import annotations

from .mutation import NAMES, SUBS, Mutation

MUTATIONS = [
    Mutation(
        "forgotten-session-unknown-op-sent-again", "lazily_queue/client/registration.py",
        "            if op is answered:\n                if op.unknown:",
        "            if op is answered:\n                if False:",
        ("tests/sim/test_forgotten_sessions.py",),
        "an op refused under a forgotten session that may have applied fails "
        "SessionForgotten, never sent again under a new session"),
    Mutation(
        "transaction-permissions-unchecked", "lazily_queue/client/connection.py",
        "            if refusal is not None:\n                return refusal\n        return None",
        "        return None",
        ("tests/client/test_client_transactions.py",),
        "a client's transaction needs the client's permission for every op it carries"),
    Mutation(
        "client-transaction-code-unchecked", "lazily_queue/client/connection.py",
        "            if (type(op) is not list or len(op) < 2 or type(op[0]) is not int\n"
        "                    or op[0] not in C.TXN_OPS):\n",
        "            if type(op) is not list or len(op) < 2 or op[0] not in C.TXN_OPS:\n",
        ("tests/client/test_review_requests.py",),
        "a transaction whose op code is not a number is refused, its slots given back"),
    Mutation(
        "client-slots-kept-on-stop", "lazily_queue/client/server.py",
        "            for _ in unproposed:\n                self._release(conn)\n",
        "            for _ in ():\n                self._release(conn)\n",
        ("tests/client/test_review_requests.py",),
        "a member stopped mid-frame gives back the slots of the ops it read, unproposed"),
    Mutation(
        "client-request-failure-escapes", "lazily_queue/client/request_serving.py",
        "        except Exception as exc:  # a request no check foresaw: refused, its slots "
        "given back\n",
        "        except ArithmeticError as exc:\n",
        ("tests/client/test_review_requests.py",),
        "a request failing in a way no check foresaw is refused and its slots given back"),
    Mutation(
        "client-hello-takes-another-clients-session", "lazily_queue/client/greeting.py",
        "    if owner_of(session) != owner_tag(name):\n",
        "    if False:\n",
        ("tests/client/test_client_access.py::"
         "test_an_op_before_hello_and_a_bad_session_are_refused",),
        "a client's hello may only name a session tagged as its own"),
    Mutation(
        "client-watches-unbounded", "lazily_queue/client/watchers.py",
        "                len(conn.watches) >= MAX_WATCHES\n",
        "                False\n",
        ("tests/client/test_review_requests.py::"
         "test_a_link_watches_a_bounded_number_of_objects",),
        "a client link reads a bounded number of objects"),
    Mutation(
        "client-unreadable-answer-sent", "lazily_queue/client/connection.py",
        "        if len(data) > P.MAX_ASSEMBLED_BYTES:  # more than a client reads: sent apart\n",
        "        if False:\n",
        ("tests/client/test_review_requests.py::"
         "test_an_object_larger_than_a_client_reads_is_refused_without_relinking",),
        "an object larger than a client reads is refused to it, not sent to make it relink"),
    Mutation(
        "client-refused-hello-unexplained", "lazily_queue/client/greeting.py",
        "        conn.hello_refused = str(exc)\n",
        "        pass\n",
        ("tests/client/test_client_access.py::"
         "test_an_op_before_hello_and_a_bad_session_are_refused",),
        "an op after a refused hello is refused with the hello's reason"),
    Mutation(
        "client-states-not-paced", "lazily_queue/client/server.py",
        "                        await conn.outbox.oversized_sent()  # one state at a time\n",
        "                        pass\n",
        ("tests/client/test_review_requests.py::"
         "test_objects_read_together_beyond_the_answer_queue_are_mirrored",),
        "states of objects read together go out one at a time, not as a stuck reader's"),
    Mutation(
        "client-retried-op-said-not-applied", "lazily_queue/client/answers.py",
        "        elif unknown_before and code not in P.REFUSALS:\n",
        "        elif False:\n",
        ("tests/client/test_review_session.py",),
        "an op sent to several members is never reported as not applied by the last one"),
    Mutation(
        "give-back-retry-refused-after-applying", "lazily_queue/client/connection.py",
        "                  and not self._applied_before(op.seq, view)):\n",
        "                  and True):\n",
        ("tests/client/test_client_give_back_retry.py",),
        "a consume-only client's retried give-back that applied is answered as applied"),
    Mutation(
        "give-back-retry-refusal-said-not-applied", "lazily_queue/client/answers.py",
        "        if unknown_before and code == \"permission\" and op.code in GIVE_BACKS:\n",
        "        if False:\n",
        ("tests/client/test_client_give_back_retry.py",),
        "a give-back refused on a retry after a lost answer is reported unknown"),
    Mutation(
        "client-unanswered-attempt-forgotten", "lazily_queue/client/answers.py",
        "            else:\n                op.unknown = True\n",
        "            else:\n                pass\n",
        ("tests/client/test_review_session.py",),
        "an attempt whose link ended unanswered leaves the op's outcome unknown"),
    Mutation(
        "client-unread-attempt-said-unknown", "lazily_queue/client/answers.py",
        "            if link.unread(op.frame):\n",
        "            if False:\n",
        ("tests/client/test_client_link_caps.py::"
         "test_an_operation_sent_only_on_links_refused_over_a_cap_was_not_applied",),
        "an attempt the member never read (a link refused over a cap) leaves the op not "
        "applied"),
    Mutation(
        "client-deadline-closes-a-sending-link", "lazily_queue/client/deadlines.py",
        "                and (not link.open or link.stalled_for(now) >= STALLED)):\n",
        "                and True):\n",
        ("tests/client/test_client_unsent_deadline.py",),
        "an op's deadline does not close a link still sending its request"),
    Mutation(
        "client-large-mirror-cut-off", "lazily_queue/client/connection.py",
        "        if paced or len(data) > MAX_OUTBOX_BYTES:  # states: not a sign of a stuck "
        "reader\n",
        "        if False:\n",
        ("tests/client/test_review_requests.py",),
        "an object larger than a client's answer queue is still mirrored to it"),
    Mutation(
        "client-long-names-cached", "lazily_queue/client/connection.py",
        "            if name is None or len(name) <= _NAME_CACHED:  # a long one is checked "
        "each time\n",
        "            if True:\n",
        ("tests/client/test_review_requests.py::test_refused_names_are_not_kept_by_the_member",),
        "a client's link does not hold the long names it was refused"),
    Mutation(
        "client-checked-names-unbounded", "lazily_queue/client/connection.py",
        "                        or self.cached_chars + chars > _CACHED_CHARS):\n",
        "                        or False):\n",
        ("tests/client/test_review_requests.py::"
         "test_a_link_keeps_a_bounded_text_of_checked_names",),
        "a client's link keeps at most 64 Ki characters of checked names and refusals"),
    Mutation(
        "client-op-containers-unbounded", "lazily_queue/client/op_admission.py",
        "    if held > most:\n",
        "    if False:\n",
        ("tests/client/test_client_containers.py::"
         "test_a_push_of_too_many_containers_is_refused_and_a_flat_one_taken",),
        "a member refuses a client op holding more containers than its message limit allows"),
    Mutation(
        "client-give-back-containers-as-a-push", "lazily_queue/client/op_shapes.py",
        "    if code in _GIVING_BACK:\n",
        "    if False:\n",
        ("tests/client/test_client_containers.py::"
         "test_a_give_back_of_a_take_holding_more_containers_than_a_push_is_taken",),
        "a client gives back a take whose values hold more containers than a push may"),
    Mutation(
        "client-turns-unbounded-in-containers", "lazily_queue/client/fair.py",
        "            if held > TURN_CONTAINERS and (k or before):\n",
        "            if False:\n",
        ("tests/client/test_client_fairness.py::"
         "test_the_scheduler_yields_to_the_loop_between_turns_of_many_containers",),
        "a member proposes at most about 65,536 containers of client ops per loop step"),
    Mutation(
        "client-op-containers-grouped-by-bytes", "lazily_queue/client/batching.py",
        "        size = max(len(cbor2.dumps(message)), op.containers * CONTAINER_BYTES)\n",
        "        size = len(cbor2.dumps(message))\n",
        ("tests/client/test_client_containers.py::"
         "test_ops_holding_many_containers_group_by_their_count",),
        "client ops holding many containers group by their count, not their encoding"),
    Mutation(
        "client-relinks-at-once", "lazily_queue/client/dialling.py",
        "                if self._served(link):\n",
        "                if True:\n",
        ("tests/client/test_review_requests.py::"
         "test_a_client_whose_member_refuses_its_session_backs_off",),
        "a client whose member takes its link but refuses its session does not relink at once"),
    Mutation(
        "client-group-forms-unbounded", "lazily_queue/client/group_names.py",
        "    while 0 < end < len(name) - 1 and len(topics) < most:\n",
        "    while 0 < end < len(name) - 1:\n",
        ("tests/client/test_review_requests.py::"
         "test_a_client_without_a_grant_watching_a_long_group_name_is_refused_at_once",),
        "a watch of a name of many colons costs the member a bounded number of checks"),
    Mutation(
        "group-hint-from-state", "lazily_queue/client/connection.py",
        "form = group_forms(name, 1)", "form = topics",
        ("tests/client/test_refusal_texts.py",),
        "a permission refusal reads the same whether a consumer group exists"),
    Mutation(
        "frames-in-hand-unbounded", "lazily_queue/client/frames_in_hand.py",
        "return not held or held + size <= self.limit",
        "return True",
        ("tests/client/test_client_frames_in_hand.py",),
        "one client's links hold at most two request limits' worth of frames decoded"),
    Mutation(
        "fair-admission-in-arrival-order", "lazily_queue/client/fair_budget.py",
        "heapq.heappush(self._heap, (held, next(self._order), fut))",
        "heapq.heappush(self._heap, (0, next(self._order), fut))",
        ("tests/client/test_client_fairness.py",),
        "a slot that frees goes to the waiting client holding the fewest"),
    Mutation(
        "fair-proposals-in-arrival-order", "lazily_queue/client/fair.py",
        "heapq.heappush(self._turns, (lane.proposed, lane.turn, lane))",
        "heapq.heappush(self._turns, (0, lane.turn, lane))",
        ("tests/client/test_client_fairness.py",),
        "a light client's op is proposed before a greedy client's queued ones"),
    Mutation(
        "window-ignores-pressure", "lazily_queue/client/proposal_window.py",
        "if target and self._pressed and self._total > target * self._count:",
        "if target and self._total > target * self._count:",
        ("tests/client/test_proposal_window.py",),
        "slow commits shrink the window only while clients' ops wait for room"),
    Mutation(
        "window-never-shrinks", "lazily_queue/client/fair.py",
        "            self.control.pressed()\n",
        "",
        ("tests/client/test_client_fairness.py",),
        "ops waiting behind slow commits shrink a member's proposal window"),
    Mutation(
        "mirror-feeds-groups-twice", "lazily_queue/client/mirror.py",
        "            if op[0] == ops.GROUP_DECLARE:\n",
        "            if False:\n",
        ("tests/client/test_client_groups.py",),
        "a client mirroring a topic and its group counts each fed element once"),
    Mutation(
        "guarded-watch-unchecked", "lazily_queue/client/connection.py",
        "        if state is seen:\n            return state is not None\n"
        "        self.settle(key, view)\n        return False\n",
        "        return True\n",
        ("tests/client/test_client_groups.py",),
        "a client reading a name as a consumer group's sees nothing of a plain work queue "
        "that takes the name"),
    Mutation(
        "group-declared-on-older-member", "lazily_queue/client/link_fit.py",
        "        if P.GROUPS_FEATURE in link.features:\n",
        "        if True:\n",
        ("tests/client/test_client_groups.py",),
        "a group declaration is not sent to a member without client groups"),
    Mutation(
        "group-by-its-own-name", "lazily_queue/client/connection.py",
        "        if any(self.grant.refusal(asked, topic) is None for topic in topics):",
        "        if False:",
        ("tests/client/test_client_groups.py",),
        "a consumer group is consumed with the consume permission on its topic's name"),
    Mutation(
        "client-ops-lowest-floor", "lazily_queue/client/batching.py",
        "    floor = max(abs(op.floor) for op in members)",
        "    floor = min(abs(op.floor) for op in members)",
        ("tests/client/test_client_cluster.py::"
         "test_more_outstanding_than_the_session_window_waits_for_the_floor",),
        "a group of a client's ops is checked against the session window as its last op"),
    Mutation(
        "client-ops-held-while-waiting", "lazily_queue/client/server.py",
        "                        self._flush_ops(conn)  # ops waiting here must not hold their"
        " slots\n                        conn.blocked = True\n"
        "                        await conn.slots.take()\n",
        "                        conn.blocked = True\n"
        "                        await conn.slots.take()\n",
        ("tests/client/test_client_batching.py",),
        "ops a member read are proposed before it waits for a client's slots"),
    Mutation(
        "client-proposes-promotion", "lazily_queue/client/access.py",
        "        if not isinstance(name, str) or code in MAINTENANCE:",
        "        if not isinstance(name, str):",
        ("tests/client/test_client_access.py::test_no_client_may_propose_a_promotion",),
        "only the leader's maintenance proposes QUEUE_PROMOTE"),
    Mutation(
        "client-proposes-work-promotion", "lazily_queue/client/access.py",
        "ops.QUEUE_PROMOTE, ops.WORK_PROMOTE, ops.POPPED_CHECKING})",
        "ops.QUEUE_PROMOTE, ops.POPPED_CHECKING})",
        ("tests/client/test_client_access.py::test_no_client_may_propose_a_promotion",),
        "only the leader's maintenance proposes WORK_PROMOTE (an admin client included)"),
    Mutation(
        "broker-port-unchecked", "lazily_queue/client/brokers.py",
        "        _ = parts.port  # raises ValueError when it is not a number\n",
        "        _ = 0\n",
        ("tests/brokers/test_bad_addresses.py::test_a_malformed_address_is_unsupported",),
        "a broker address whose port is not a number is UnsupportedAddress, no password shown"),
    Mutation(
        "member-takes-long-client-name", "lazily_queue/client/op_admission.py",
        "    problem = (shape_problem(code, args) or op_name_problem(code, args)\n",
        "    problem = (shape_problem(code, args)\n",
        (f"{NAMES}::test_a_member_refuses_a_clients_overlong_name",),
        "a member refuses a client's op naming an object over 1024 characters"),
    Mutation(
        "object-cap-untyped-on-client", "lazily_queue/client/protocol.py",
        "    if isinstance(exc, TooManyObjects):\n",
        "    if False:\n",
        (f"{NAMES}::test_members_cap_the_objects_a_cluster_holds",),
        "a client sees the member's object-cap refusal as TooManyObjects with its limit"),
    Mutation(
        "member-takes-long-subscriber", "lazily_queue/client/op_admission.py",
        "               or op_member_problem(code, args))\n",
        "               or None)\n",
        (f"{SUBS}::test_a_member_refuses_a_clients_overlong_subscriber_or_worker",),
        "a member refuses a client's subscribe or claim naming a subscriber or worker over "
        "1024 characters"),
    Mutation(
        "subscriber-cap-untyped-on-client", "lazily_queue/client/protocol.py",
        "    if isinstance(exc, TooManySubscribers):\n",
        "    if False:\n",
        (f"{SUBS}::test_members_cap_the_subscriptions_of_a_topic",),
        "a client sees the member's subscriber-cap refusal as TooManySubscribers with its "
        "limit"),
    Mutation(
        "subscriber-delete-without-consume", "lazily_queue/client/access.py",
        "        elif code in CONSUME:\n            needed = (\"consume\",)",
        "        elif code in CONSUME:\n            needed = (\"consume\",) if code != "
        "ops.TOPIC_DELETE_SUBSCRIBER else (\"produce\", \"consume\")",
        ("tests/client/test_client_access.py::test_deleting_a_subscriber_needs_consume_on_the"
         "_topic",),
        "a client deletes a topic's subscriber only with consume (or admin) on the topic"),
    Mutation(
        "barrier-answer-unbounded", "lazily_queue/client/barrier.py",
        "                                                ask_ms / 1000 + BARRIER_GRACE)\n",
        "                                                None)\n",
        ("tests/client/test_review_requests.py::"
         "test_a_barrier_a_member_never_answers_ends_with_commit_timeout",),
        "a client's barrier ends by its timeout even when its member never answers"),
    Mutation(
        "link-ended-request-waits", "lazily_queue/client/link.py",
        "        if self.ended:\n",
        "        if False:\n",
        ("tests/client/test_client_connection.py::"
         "test_a_request_made_on_a_link_that_ended_is_answered_none",
         "tests/client/test_review_requests.py::"
         "test_a_barrier_its_member_refuses_for_now_is_made_again_on_the_next_link"),
        "a request made on a link whose run ended is answered None, not kept for ever"),
    Mutation(
        "link-ended-request-encodes", "lazily_queue/client/link.py",
        "        if not self.ended:\n            self._queue(P.encode([rid, *frame]))\n",
        "        if True:\n            self._queue(P.encode([rid, *frame]))\n",
        ("tests/client/test_client_connection.py::"
         "test_a_request_made_on_a_link_that_ended_is_answered_none",),
        "nothing is encoded for a link that can no longer send it"),
    Mutation(
        "client-op-shape-unchecked", "lazily_queue/client/op_admission.py",
        "    problem = (shape_problem(code, args) or op_name_problem(code, args)\n",
        "    problem = (None or op_name_problem(code, args)\n",
        ("tests/client/test_client_access.py::"
         "test_a_member_refuses_malformed_ops_before_they_reach_the_log",),
        "a client's op of the wrong shape is refused before it reaches the log"),
    Mutation(
        "client-sets-expiry-rules-unchecked", "lazily_queue/client/connection.py",
        "        if code == C.EXPIRY_RULES:\n",
        "        if False:\n",
        ("tests/client/test_client_access.py::"
         "test_expiry_rules_on_an_object_that_held_elements_need_admin",),
        "a client without admin cannot expire what a queue or topic holds by giving it rules"),
    Mutation(
        "client-gives-back-anything", "lazily_queue/client/popped.py",
        "    if pop is None or pop.stamp(i) != stamp:\n        return None\n",
        "    if pop is None or True:\n        return pop\n",
        ("tests/client/test_client_access.py::"
         "test_a_consume_only_client_gives_back_only_what_it_popped",),
        "a consume-only client gives back to a queue's head only what it popped, as popped"),
    Mutation(
        "client-group-name-with-separator", "lazily_queue/client/connection.py",
        "        if (code == C.GROUP_DECLARE and isinstance(args[1], str)",
        "        if False and (code == C.GROUP_DECLARE and isinstance(args[1], str)",
        ("tests/client/test_client_access.py::"
         "test_a_client_makes_no_new_group_whose_name_has_the_separator",),
        "a client cannot take another topic's consumer group by a name with ':'"),
    Mutation(
        "client-grants-share-a-session-tag", "lazily_queue/client/access.py",
        "            if other != grant.name:\n",
        "            if False:\n",
        ("tests/client/test_client_access.py::"
         "test_clients_whose_names_share_a_session_tag_are_refused",),
        "two clients whose names share a session tag are refused: either could name the "
        "other's sessions"),
    Mutation(
        "client-answers-unbounded", "lazily_queue/client/outbox.py",
        "            if budget.held > budget.limit:\n",
        "            if False:\n",
        ("tests/client/test_client_answer_budget.py",),
        "the answers queued for all client links are bounded: links that do not read are cut"),
    Mutation(
        "client-answers-cut-the-largest", "lazily_queue/client/outbox.py",
        "key=lambda box: box.progress, default=None)",
        "key=lambda box: -box.queued, default=None)",
        ("tests/client/test_client_answer_budget.py",),
        "over the bound for answers, the links that took bytes least recently are cut first, "
        "not a reader of a large state"),
    Mutation(
        "client-watched-names-unbounded-across-links", "lazily_queue/client/watchers.py",
        "        if key not in conn.watches and held + len(key[1]) > MAX_CLIENT_WATCHED_CHARS:\n",
        "        if False:\n",
        ("tests/client/test_client_watches.py::"
         "test_a_client_watches_names_of_bounded_length_through_all_its_links",),
        "the names a client watches through all its links together are bounded"),
    Mutation(
        "take-room-resent-at-once", "lazily_queue/client/session.py",
        "        if op.roomless and op.seq != floor:\n"
        "            return  # it goes once the oldest unanswered (:mod:`.take_room`)\n",
        "",
        ("tests/client/test_take_room_resend.py",),
        "a take answered no_room waits for its session's earlier ops before it goes again"),
    Mutation(
        "client-gives-back-both-copies", "lazily_queue/client/connection.py",
        "            if once is not None:  # two copies of an id popped together: one goes back\n",
        "            if False:\n",
        ("tests/client/test_client_give_back_twice.py::"
         "test_a_consume_only_give_back_of_both_copies_gives_one_back",),
        "a consume-only client's give-back naming both copies of one id gives the rest back"),
]
