"""What consensus asks the state machine about the ops a member proposes (their names,
the bounds their arguments obey, and the ops a member proposes first as it becomes
leader): :class:`Proposing` answers for :class:`~.state_machine.StateMachine`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .ops import CLIENT_OP, MESSAGE_OPS, POPPED_CHECKING, TXN, op_name

if TYPE_CHECKING:
    from .session_popped import SessionPopped


class Proposing:
    """The proposal methods of :class:`~.state_machine.StateMachine`
    (:class:`~..raft.fsm.FSM`'s)."""

    popped: SessionPopped

    def op_name(self, code: int) -> str:
        return op_name(code)

    def bounds_containers(self, code: int) -> bool:
        """A message op or a transaction of the member's own (a client's ops are bounded
        where its member admits them, a give-back with what a take may answer)."""
        return code in MESSAGE_OPS or code == TXN

    def carries_message(self, code: int) -> bool:
        """A message op, or a client's op (its last argument is its inner op's last:
        the message of a push or publish, small for the others)."""
        return code in MESSAGE_OPS or code == CLIENT_OP

    def leading_ops(self) -> list[tuple[int, list[Any]]]:
        """``POPPED_CHECKING`` while the sessions' records of popped elements are not
        checking (:mod:`.session_popped`): first in its leader's term, it precedes every
        pop of that term, and so every pop of a fresh cluster."""
        return [] if self.popped.checking else [(POPPED_CHECKING, [])]
