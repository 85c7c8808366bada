"""Cluster operations: a barrier through the log, the replicated member addresses and the
wrapper of a client's op."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import ops
from .events import MemberAddressed
from .family import Family

if TYPE_CHECKING:
    from .state_machine import StateMachine


def barrier(sm: StateMachine, args: list[Any]) -> Any:
    """Applies nothing; its result is the leader's time stamp."""
    return sm.now


def member_address(sm: StateMachine, args: list[Any]) -> Any:
    node_id, address = args
    sm.addresses[str(node_id)] = str(address)
    sm.emit(MemberAddressed(str(node_id), str(address)))
    return None


def member_forget(sm: StateMachine, args: list[Any]) -> Any:
    """Drops the address record of a node (refused by ``add_member``, or removed); given
    ``[node_id, address]``, only while the record still holds that address (one that a
    later ``add_member`` replicated stays)."""
    node = str(args[0])
    if len(args) > 1 and sm.addresses.get(node) != args[1]:
        return None
    sm.addresses.pop(node, None)
    return None


def client_op(sm: StateMachine, args: list[Any]) -> Any:
    """A client's op under its own session (see ``StateMachine.apply_client``)."""
    return sm.apply_client(args)


def client_ops(sm: StateMachine, args: list[Any]) -> Any:
    """A client's ops proposed together (see ``StateMachine.apply_client_ops``)."""
    return sm.apply_client_ops(args)


FAMILY = Family("cluster", {ops.BARRIER: barrier, ops.MEMBER_ADDRESS: member_address,
                            ops.MEMBER_FORGET: member_forget, ops.CLIENT_OP: client_op,
                            ops.CLIENT_OPS: client_ops})
