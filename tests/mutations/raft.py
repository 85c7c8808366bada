"""Planted defects in the Raft room (``lazily_queue/raft``)."""

from __future__ import annotations

from .mutation import DISK, Mutation

MUTATIONS = [
    Mutation(
        "member-message-containers-unbounded", "lazily_queue/raft/values.py",
        "        if container_limit is not None and held > container_limit // CONTAINER_BYTES:\n",
        "        if False:\n",
        ("tests/raft/test_large_messages.py::"
         "test_a_members_message_holds_one_container_per_16_bytes_of_the_limit",),
        "a member's own message holds one container per 16 bytes of max_message_bytes"),
    Mutation(
        "release-before-fsync", "lazily_queue/raft/pipeline.py",
        "        if not self._held and self._written == self._synced and self.stall is None:\n"
        "            return [ready]",
        "        if True:\n            return [ready]",
        ("tests/raft/test_disk_errors.py",),
        "votes and acknowledgements leave only after the fsync covering their writes"),
    Mutation(
        "leader-counts-unsynced-copy", "lazily_queue/raft/engine.py",
        '        if not patches.enabled("durable-leader-commit"):\n            return',
        "        if True:\n            return",
        (f"{DISK}::test_nothing_is_acknowledged_before_a_majority_fsynced",),
        "acknowledged = fsynced on a majority, the leader's own copy counted once durable"),
    Mutation(
        "fsync-error-ignored", "lazily_queue/raft/fsync_runs.py",
        "        if error is not None:\n            self._stall(error)\n            return False\n"
        "        for ready in self.pipeline.fsync_done():",
        "        if False:\n            self._stall(error)\n            return False\n"
        "        for ready in self.pipeline.fsync_done():",
        (f"{DISK}::test_a_member_whose_disk_fills_hands_over_and_catches_up",),
        "a failed fsync stops acknowledgements (never treated as success)"),
    Mutation(
        "failed-fsync-trusted", "lazily_queue/raft/journal.py",
        "        self._generation += 1\n        self._written_index = self._durable_index\n"
        "        if self._rewrite:\n            return\n",
        "        return\n",
        (f"{DISK}::test_a_failed_fsync_is_never_trusted",),
        "records written before a failed fsync are written again, not trusted"),
    Mutation(
        "torn-append-kept", "lazily_queue/raft/journal.py",
        "        self._truncate = True\n        with contextlib.suppress(OSError):\n"
        "            self._disk.truncate(self.path, self._base)\n"
        "            self._truncate = False",
        "        return",
        (f"{DISK}::test_a_failed_append_is_cut_back_to_the_last_whole_record",),
        "an append that failed part-way never stays in the journal"),
    Mutation(
        "journal-checksum", "lazily_queue/raft/records.py",
        "record_crc(index, term, bytes(data[pos + HEADER.size : end])) != crc:",
        "False:",
        ("tests/raft/test_journal.py",),
        "a damaged journal record is refused, never applied"),
    Mutation(
        "cut-leaves-stale-records", "lazily_queue/raft/disk.py",
        "        if size < f.end:\n",
        "        if False:\n",
        ("tests/raft/test_journal_format.py",),
        "a cut journal reads as zeros after it: no stale record reappears after a shorter one"),
    Mutation(
        "failed-growth-kept", "lazily_queue/raft/disk.py",
        "os.ftruncate(f.fd, old)",
        "pass",
        ("tests/raft/test_journal_format.py",),
        "a journal growth that failed (full disk) leaves the file as it was"),
    Mutation(
        "sector-torn-record-damaged", "lazily_queue/raft/records.py",
        "    if plausible and size >= end > zeros_from:\n",
        "    if False:\n",
        ("tests/raft/test_journal_format.py",),
        "a record torn at a sector boundary of the preallocated file is cut, with no floor"),
    Mutation(
        "unpickler-globals", "lazily_queue/raft/safe_pickle.py",
        "    scan(raw)\n    try:\n        return _RestrictedUnpickler(io.BytesIO(raw)).load()",
        "    try:\n        return __import__('pickle').loads(raw)",
        ("tests/raft/test_safe_pickle.py",),
        "entries from peers unpickle plain values only (both the opcode scan and the "
        "unpickler that refuses globals are removed: either alone still holds)"),
    Mutation(
        "count-each-vote-once", "lazily_queue/raft/patches.py",
        '    if not enabled("count-each-vote-once") or message.get("term") != term:',
        "    if True:",
        ("tests/sim/test_found_bugs.py",),
        "a duplicated vote is counted once (election safety)"),
    Mutation(
        "snapshot-ends-before-durable", "lazily_queue/raft/snapshot.py",
        "            if not self.writer.poll():",
        "            if False:",
        ("tests/raft/test_snapshot_thread.py::test_the_loop_runs_while_a_snapshot_file_is_written",),
        "the engine compacts its journal before the snapshot file is durable"),
    Mutation(
        "leader-snapshot-under-ours", "lazily_queue/raft/snapshot.py",
        "        self.wait()  # our own snapshot, still being written,",
        "        pass  #",
        ("tests/raft/test_snapshot_thread.py::test_a_leaders_snapshot_waits_for_ours_and_lands_last",),
        "a snapshot of ours still being written lands over the one installed from the leader"),
    Mutation(
        "stale-snapshot-installed", "lazily_queue/raft/snapshot.py",
        '            if self.is_stale(doc["last"]):',
        "            if False:",
        ("tests/sim/test_found_bugs.py::test_a_stale_snapshot_keeps_the_entries_after_it",),
        "a delayed copy of an older snapshot never clears entries a follower acknowledged"),
    Mutation(
        "leader-outside-configuration-ignored", "lazily_queue/raft/delivery.py",
        '            if message.get("type") != "append_entries":',
        "            if True:",
        ("tests/sim/test_found_bugs.py::"
         "test_a_leader_missing_from_a_followers_configuration_still_replicates_to_it",),
        "a member that missed a re-addition still takes the new leader's entries"),
    Mutation(
        "meta-field-types-unchecked", "lazily_queue/raft/meta.py",
        "        if key in meta and not valid(meta[key]):",
        "        if False:",
        ("tests/raft/test_journal.py::"
         "test_a_checksummed_metadata_copy_with_a_field_of_the_wrong_type_is_damaged",),
        "a metadata copy whose fields have the wrong types is damaged, not a traceback"),
    Mutation(
        "failed-replace-keeps-partial-file", "lazily_queue/raft/disk.py",
        "            with contextlib.suppress(OSError):  # a partial copy would hold the space\n"
        "                os.remove(tmp)\n",
        "            pass\n",
        ("tests/raft/test_snapshot_disk_full.py::"
         "test_a_snapshot_the_disk_refuses_leaves_no_partial_file_holding_the_space",),
        "a snapshot or metadata write the disk refuses leaves no partial file holding space"),
    Mutation(
        "snapshot-refusal-flood", "lazily_queue/raft/snapshot.py",
        'logging.getLogger("pysyncobj.syncobj").addFilter(_not_the_library_report)',
        'logging.getLogger("pysyncobj.syncobj")',
        ("tests/raft/test_snapshot_disk_full.py::"
         "test_a_node_whose_snapshots_are_refused_logs_it_once",),
        "a disk refusing snapshots is logged once, not one library warning per step"),
    Mutation(
        "snapshot-without-state", "lazily_queue/raft/snapshot_format.py",
        '    if "state" not in doc:\n        raise SnapshotError("snapshot holds no state")',
        '    if False:\n        raise SnapshotError("snapshot holds no state")',
        ("tests/raft/test_snapshot_encoding.py::"
         "test_a_checksummed_snapshot_without_its_state_is_refused_in_one_line",),
        "a checksummed snapshot without its state is damaged data, not a KeyError traceback"),
    Mutation(
        "rejoin-floor-after-wipe", "lazily_queue/raft/rejoin.py",
        "    store.store(meta)  # durable first: a wipe cut short must still withhold the vote\n"
        "    disk.remove(log_path)\n    disk.remove(snapshot_path)\n",
        "    disk.remove(log_path)\n    disk.remove(snapshot_path)\n    store.store(meta)\n",
        ("tests/cli/test_rejoin_cli.py::test_a_wipe_cut_short_keeps_the_floor",),
        "the rejoin floor is durable before the journal is removed (a crash mid-wipe keeps it)"),
    Mutation(
        "older-snapshot-drops-journal", "lazily_queue/raft/rejoin.py",
        '    if len(journal) and journal.first_index > doc["prev"][1]:',
        "    if False:",
        ("tests/raft/test_missing_files.py::"
         "test_an_older_snapshot_than_the_journal_continues_is_refused",),
        "a snapshot older than the journal continues is refused, not the journal dropped"),
    Mutation(
        "read-waits-on-fifo", "lazily_queue/raft/disk.py",
        "        if not stat.S_ISREG(mode):\n            os.close(fd)\n",
        "        if False:\n            os.close(fd)\n",
        ("tests/raft/test_disk_errors.py::"
         "test_a_file_that_is_not_a_regular_file_is_refused_not_waited_on",),
        "a FIFO or device in place of a data file is refused, not waited on or read as empty"),
    Mutation(
        "snapshot-weight-walks-all", "lazily_queue/raft/snapshot_pieces.py",
        "                total += len(item)\n                if total > cap:\n"
        "                    return total\n",
        "                total += len(item)\n",
        ("tests/raft/test_snapshot_encoding.py::test_weighing_a_large_container_stops_at_the_cap",),
        "weighing a large container stops at the cap instead of walking every item"),
    Mutation(
        "snapshot-worker-keeps-lock", "lazily_queue/raft/snapshot_writer.py",
        "data(LockYield() if worker else None)", "data(None)",
        ("tests/raft/test_snapshot_encoding.py::"
         "test_the_state_is_encoded_on_the_worker_as_it_was_when_taken",),
        "a snapshot encoded on the worker thread hands the interpreter lock back to the loop"),
    Mutation(
        "snapshot-pieces-no-pause", "lazily_queue/raft/snapshot_pieces.py",
        "            if pause is not None:\n                pause()\n", "",
        ("tests/raft/test_snapshot_encoding.py::"
         "test_the_encoder_pauses_between_runs_and_gives_the_same_bytes",),
        "the encoder pauses between runs of items"),
    Mutation(
        "lock-yield-never-sleeps", "lazily_queue/raft/snapshot_writer.py",
        "        if self._clock() - self._mark >= self.work:",
        "        if self._clock() - self._mark >= self.work * 1000:",
        ("tests/raft/test_snapshot_encoding.py::"
         "test_a_lock_yield_sleeps_once_its_work_slice_has_passed",),
        "a lock yield sleeps once its work slice has passed"),
    Mutation(
        "later-items-not-converted", "lazily_queue/raft/snapshot_pieces.py",
        "        if convert is not None:\n            item = convert(item)\n", "",
        ("tests/replicated/test_snapshot_capture.py",),
        "deferred records are converted as they are encoded (same bytes as the plain capture)"),
    Mutation(
        "subscriber-delete-feature-unrequired", "lazily_queue/raft/features.py",
        "CLIENT_SESSIONS_FEATURE, SUBSCRIBER_DELETE_FEATURE,\n",
        "CLIENT_SESSIONS_FEATURE,\n",
        ("tests/raft/test_mesh_node.py::test_a_member_of_an_older_version_is_refused_at_the"
         "_handshake",),
        "a member without TOPIC_DELETE_SUBSCRIBER is refused at the handshake (no divergence)"),
    Mutation(
        "member-forget-feature-unrequired", "lazily_queue/raft/features.py",
        "SUBSCRIBER_DELETE_FEATURE,\n                               MEMBER_FORGET_FEATURE, ",
        "SUBSCRIBER_DELETE_FEATURE,\n                               ",
        ("tests/raft/test_mesh_node.py::test_a_member_of_an_older_version_is_refused_at_the"
         "_handshake",),
        "a member that forgets addresses regardless is refused at the handshake"),
    Mutation(
        "client-ephemeral-feature-unrequired", "lazily_queue/raft/features.py",
        "MEMBER_FORGET_FEATURE, CLIENT_EPHEMERAL_FEATURE,\n",
        "MEMBER_FORGET_FEATURE,\n",
        ("tests/raft/test_mesh_node.py::test_a_member_of_an_older_version_is_refused_at_the"
         "_handshake",),
        "a member without CLIENT_ALIVE and EPHEMERAL_REAP is refused at the handshake"),
    Mutation(
        "session-kept-bytes-feature-unrequired", "lazily_queue/raft/features.py",
        "SESSION_KEPT_BYTES_FEATURE, SESSION_END_FEATURE,\n",
        "SESSION_END_FEATURE,\n",
        ("tests/raft/test_mesh_node.py::test_a_member_of_an_older_version_is_refused_at_the"
         "_handshake",),
        "a member keeping session results past their bytes is refused at the handshake"),
    Mutation(
        "session-end-feature-unrequired", "lazily_queue/raft/features.py",
        "SESSION_KEPT_BYTES_FEATURE, SESSION_END_FEATURE,\n",
        "SESSION_KEPT_BYTES_FEATURE,\n",
        ("tests/raft/test_mesh_node.py::test_a_member_of_an_older_version_is_refused_at_the"
         "_handshake",),
        "a member without SESSION_END is refused at the handshake (no divergence)"),
    Mutation(
        "group-run-snapshot-feature-unrequired", "lazily_queue/raft/features.py",
        "GROUP_RUN_SNAPSHOT_FEATURE, SESSION_REGISTER_FEATURE,",
        "SESSION_REGISTER_FEATURE,",
        ("tests/raft/test_mesh_node.py::test_a_member_of_an_older_version_is_refused_at_the"
         "_handshake",),
        "a member that cannot install a group's run in a snapshot is refused at the handshake"),
    Mutation(
        "session-register-feature-unrequired", "lazily_queue/raft/features.py",
        "GROUP_RUN_SNAPSHOT_FEATURE, SESSION_REGISTER_FEATURE,\n",
        "GROUP_RUN_SNAPSHOT_FEATURE,\n",
        ("tests/raft/test_mesh_node.py::test_a_member_of_an_older_version_is_refused_at_the"
         "_handshake",),
        "a member that opens a forgotten registered session at its op is refused at the "
        "handshake"),
    Mutation(
        "receipts-total-feature-unrequired", "lazily_queue/raft/features.py",
        "SESSION_REGISTER_FEATURE,\n                               RECEIPTS_TOTAL_FEATURE, ",
        "SESSION_REGISTER_FEATURE,\n                               ",
        ("tests/raft/test_mesh_node.py::test_a_member_of_an_older_version_is_refused_at_the"
         "_handshake",),
        "a member keeping receipts past the bound of all queues is refused at the handshake"),
    Mutation(
        "client-refusals-feature-unrequired", "lazily_queue/raft/features.py",
        "RECEIPTS_TOTAL_FEATURE, CLIENT_REFUSALS_FEATURE,\n",
        "RECEIPTS_TOTAL_FEATURE,\n",
        ("tests/raft/test_mesh_node.py::test_a_member_of_an_older_version_is_refused_at_the"
         "_handshake",),
        "a member answering a retried refused client op as applied is refused at the "
        "handshake"),
    Mutation(
        "claim-bytes-feature-unrequired", "lazily_queue/raft/features.py",
        "TAKE_BYTES_FEATURE, CLAIM_BYTES_FEATURE,\n",
        "TAKE_BYTES_FEATURE,\n",
        ("tests/raft/test_mesh_node.py::test_a_member_of_an_older_version_is_refused_at_the"
         "_handshake",),
        "a member leasing more than a claim's session keeps room for is refused at the "
        "handshake"),
    Mutation(
        "kept-by-owner-feature-unrequired", "lazily_queue/raft/features.py",
        "                               KEPT_BY_OWNER_FEATURE, EXPIRE_LIMIT_FEATURE,\n",
        "                               EXPIRE_LIMIT_FEATURE,\n",
        ("tests/raft/test_mesh_node.py::test_a_member_of_an_older_version_is_refused_at_the"
         "_handshake",),
        "a member shedding kept results by session rather than by client is refused at the "
        "handshake"),
    Mutation(
        "take-room-feature-unrequired", "lazily_queue/raft/features.py",
        "                               GIVE_BACK_CHECKED_FEATURE,\n"
        "                               TAKE_ROOM_FEATURE,\n",
        "                               GIVE_BACK_CHECKED_FEATURE,\n",
        ("tests/raft/test_mesh_node.py::test_a_member_of_an_older_version_is_refused_at_the"
         "_handshake",),
        "a member taking a sized take whole is refused at the handshake"),
    Mutation(
        "ended-by-owner-feature-unrequired", "lazily_queue/raft/features.py",
        "                               TAKE_ROOM_FEATURE,\n"
        "                               ENDED_BY_OWNER_FEATURE,\n",
        "                               TAKE_ROOM_FEATURE,\n",
        ("tests/raft/test_mesh_node.py::test_a_member_of_an_older_version_is_refused_at_the"
         "_handshake",),
        "a member forgetting the oldest ended session of all is refused at the handshake"),
    Mutation(
        "session-nonce-feature-unrequired", "lazily_queue/raft/features.py",
        "                               ENDED_BY_OWNER_FEATURE,\n"
        "                               SESSION_NONCE_FEATURE})",
        "                               ENDED_BY_OWNER_FEATURE})",
        ("tests/raft/test_mesh_node.py::test_a_member_of_an_older_version_is_refused_at_the"
         "_handshake",),
        "a member refusing a register with a nonce as malformed is refused at the handshake"),
    Mutation(
        "session-key-not-restored", "lazily_queue/replicated/session_register.py",
        "    sm.registrations, sm.session_key = count, key\n",
        "    sm.registrations, sm.session_key = count, 0\n",
        ("tests/replicated/test_session_register.py::test_the_key_survives_a_snapshot_and_a"
         "_restored_replica_registers_alike",),
        "a replica restored from a snapshot answers other registered ids than the others"),
    Mutation(
        "batch-half-proposed", "lazily_queue/raft/calls.py",
        "            for proposal, fut in calls:\n"
        "                self._abandon(proposal, fut, None)\n"
        "            self._observe_call(code, started, None, exc)\n",
        "            self._observe_call(code, started, None, exc)\n",
        ("tests/raft/test_batch_proposals.py::"
         "test_a_batch_one_op_of_which_cannot_be_proposed_proposes_none",),
        "a batch whose op cannot be proposed leaves none of its ops proposed"),
    Mutation(
        "foreign-journal-torn", "lazily_queue/raft/records.py",
        "        plausible = index >= 1 and 1 <= term <= MAX_TERM\n",
        "        plausible = True\n",
        ("tests/raft/test_journal.py::"
         "test_a_journal_replaced_by_other_bytes_is_damaged_not_torn",),
        "a journal replaced by other bytes is damaged (the vote withheld), not a torn tail"),
    Mutation(
        "worker-fsync-after-tick", "lazily_queue/raft/driver.py",
        "        self._start_fsync()\n"
        "        if self.pipeline.stall is not None:\n"
        "            return\n"
        "        if self._half",
        "        if self._inline():\n"
        "            self._start_fsync()\n"
        "        if self.pipeline.stall is not None:\n"
        "            return\n"
        "        if self._half",
        ("tests/raft/test_fsync_handover.py::"
         "test_a_step_starts_its_worker_fsync_before_its_tick_applies",),
        "a step's worker fsync starts between its halves, not after the tick applied"),
    Mutation(
        "fsync-handover-skipped", "lazily_queue/raft/fsync.py",
        "        if self._taken.wait(HANDOVER):\n",
        "        if self._taken.is_set():\n",
        ("tests/raft/test_fsync_handover.py::"
         "test_the_worker_has_taken_its_fsync_when_start_returns",),
        "starting a worker fsync waits for the worker to take it"),
    Mutation(
        "prepared-fsync-target-ignored", "lazily_queue/raft/journal.py",
        "            generation, target = prepared or (self._generation, self._written_index)\n",
        "            generation, target = self._generation, self._written_index\n",
        ("tests/raft/test_fsync_handover.py::"
         "test_a_detached_fsync_covers_what_was_written_when_it_was_prepared",
         "tests/raft/test_fsync_handover.py::"
         "test_a_prepared_fsync_proves_nothing_once_the_log_was_cut"),
        "a detached fsync claims only what was written when it was prepared"),
    Mutation(
        "prepared-descriptor-unused", "lazily_queue/raft/disk.py",
        "        fd = self._prepared.pop(path, None)\n        if fd is None:\n",
        "        fd = None\n        if fd is None:\n",
        ("tests/raft/test_fsync_handover.py::"
         "test_the_prepared_descriptor_is_the_one_synced_then_closed",),
        "a detached sync uses the descriptor opened on the writing thread"),
    Mutation(
        "membership-from-journal-ignored", "lazily_queue/raft/log_config.py",
        "    if not patches.enabled(PATCH):\n        return 0\n    applied",
        "    if True:\n        return 0\n    applied",
        ("tests/raft/test_membership_restart.py::"
         "test_a_restarted_founder_runs_with_the_members_in_its_log",),
        "a restarted member runs with the membership in its log, not the one it was given"),
    Mutation(
        "committed-membership-applied-again", "lazily_queue/raft/adapters.py",
        "        if in_effect_already(command):\n",
        "        if False:\n",
        ("tests/raft/test_membership_restart.py::"
         "test_a_committed_change_applied_after_a_restart_undoes_no_later_one",),
        "a committed addition applied after a restart does not undo a later removal"),
    Mutation(
        "unaddressed-member-never-linked", "lazily_queue/raft/release.py",
        "        if ready.events and self._unaddressed:\n",
        "        if False:\n",
        ("tests/raft/test_membership_restart.py::"
         "test_members_added_one_at_a_time_all_link_to_each_other",),
        "a member added before its address applied is linked once it has"),
    Mutation(
        "rejoining-member-alone-elects-itself", "lazily_queue/raft/prevote.py",
        "now + e._SyncObj__generateRaftTimeout() if e.rejoining else float(\"-inf\"))",
        "float(\"-inf\"))",
        ("tests/raft/test_one_member_start.py::"
         "test_a_member_alone_that_rejoins_never_elects_itself",),
        "a wiped member that knows no other member never leads on its empty log"),
    Mutation(
        "cancelled-pop-result-dropped", "lazily_queue/raft/driver.py",
        "                if fut.cancelled() and error is None and on_orphan is not None:",
        "                if False:",
        ("tests/raft/test_node.py::"
         "test_a_pop_cancelled_as_it_commits_on_one_member_keeps_the_element",),
        "a pop cancelled as it commits gives its element back"),
    Mutation(
        "second-process-of-a-member-accepted", "lazily_queue/raft/link_identity.py",
        "                and self.live(peer):",
        "                and False:",
        ("tests/raft/test_link_identity.py::"
         "test_a_second_process_is_refused_while_the_first_is_live",),
        "a second process claiming a member whose link is live is refused"),
    Mutation(
        "removed-member-incarnation-accepted", "lazily_queue/raft/incarnations.py",
        "        if incarnations[0] in self.retired.get(peer, ()):",
        "        if False:",
        ("tests/raft/test_mesh_node.py::"
         "test_a_member_added_back_elsewhere_is_linked_by_a_node_with_stale_peers[running]",),
        "a removed member's process is refused once its id is added back"),
    Mutation(
        "transfer-does-not-pause-proposals", "lazily_queue/raft/engine.py",
        "            if patches.enabled(\"paused-transfer\"):",
        "            if False:",
        ("tests/raft/test_transfer.py::"
         "test_a_transfer_under_steady_writes_hands_over_and_loses_nothing",),
        "a leadership transfer under steady writes hands over and loses nothing"),
    Mutation(
        "status-names-a-silent-leader", "lazily_queue/raft/replica.py",
        "        if (leader is not None and not e.is_leader\n",
        "        if (False\n",
        ("tests/raft/test_status_leader.py::"
         "test_a_survivor_of_a_lost_majority_names_no_leader",),
        "a survivor of a lost majority names no leader in its status"),
    Mutation(
        "transfer-notice-from-anyone-taken", "lazily_queue/raft/transfer_notice.py",
        "        said = read_notice(frame) if peer in self.capable else None",
        "        said = read_notice(frame)",
        ("tests/raft/test_transfer_notice.py::"
         "test_a_notice_out_of_place_is_a_bad_frame[unannounced]",),
        "a transfer notice from a peer that did not announce the feature is a bad frame"),
]
