"""The replicated queue state machine, beside consensus (:mod:`lazily_queue.raft`).

It applies committed batches of queue, topic, work-queue and cluster operations with
sessions for idempotence (:mod:`.state_machine`), names their op codes (:mod:`.ops`),
reports typed events (:mod:`.events`) and is read through a :class:`~.view.ReadView`.
Consensus never imports it: the node hands a :class:`~.state_machine.StateMachine` to
the replica.
"""
