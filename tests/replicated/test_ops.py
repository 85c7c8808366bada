"""Op codes: one code per operation, every code named, every code handled."""

from __future__ import annotations

from lazily_queue.raft.batch import BATCH_FORMAT, decode_command, encode_command
from lazily_queue.replicated import ops
from lazily_queue.replicated.state_machine import FAMILIES, StateMachine


def _declared_codes() -> dict[str, int]:
    """Every op-code constant of the ops module (upper-case ints)."""
    return {k: v for k, v in vars(ops).items()
            if k.isupper() and isinstance(v, int) and not isinstance(v, bool)}


def test_every_command_code_is_unique_and_named() -> None:
    codes = _declared_codes()
    assert len(set(codes.values())) == len(codes), f"two ops share a code: {codes}"
    assert set(ops.OP_NAMES) == set(codes.values())
    for constant, code in codes.items():
        assert ops.OP_NAMES[code] == constant.lower()
        assert ops.op_name(code) == constant.lower()


def test_a_declaration_is_named_queue_declare() -> None:
    assert ops.op_name(ops.QUEUE_DECLARE) == "queue_declare"
    assert StateMachine().op_name(ops.QUEUE_DECLARE) == "queue_declare"


def test_every_code_has_exactly_one_handler() -> None:
    handled = [code for family in FAMILIES for code in family.handlers]
    assert sorted(handled) == sorted(ops.OP_NAMES)
    assert {f.name for f in FAMILIES} == {"queues", "cluster", "topics", "work_queues", "admin",
                                        "dedup", "transactions", "groups", "scheduling",
                                        "headers", "expiry", "limits", "queue_options",
                                        "topic_options", "work_options", "ephemeral_owners",
                                        "session_end", "session_register", "session_popped"}


def test_the_batch_format_is_not_an_op() -> None:
    """The batch's format tag lives in the batch, beside (not among) the op codes."""
    payload = encode_command(7, 0, [[1, ops.QUEUE_DECLARE, "q", None]])
    assert decode_command(payload) == (7, 0, [[1, ops.QUEUE_DECLARE, "q", None]])
    assert not hasattr(ops, "FORMAT") and BATCH_FORMAT == 1
