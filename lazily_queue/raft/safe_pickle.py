"""The only pickles PySyncObj may read: plain values, checked opcode by opcode first.

PySyncObj pickles its log entries (a regular command is ``(func_id, (payload, stamp))``,
a membership change ``["add", "4"]``, a version change an int) and unpickles what peers
send. Before unpickling, :func:`restricted_loads` scans the opcodes and refuses, with
:class:`UnsafePickleError`, anything a real entry never holds: memo fetches (which let
a few bytes build a DAG whose hashing costs 2^depth), dicts, sets and frozensets,
globals, object construction (reduce, build, newobj, inst, obj, ext, persistent ids),
text-protocol opcodes, more than :data:`MAX_PICKLE_BYTES` bytes,
:data:`MAX_PICKLE_OPCODES` opcodes or :data:`MAX_PICKLE_DEPTH` levels of nesting.
The unpickler also refuses every global, should the scan ever miss one.
"""

from __future__ import annotations

import io
import pickle
import pickletools
from typing import Any

__all__ = [
    "MAX_PICKLE_BYTES",
    "MAX_PICKLE_DEPTH",
    "MAX_PICKLE_OPCODES",
    "PICKLE_PROTOCOL",
    "UnsafePickleError",
    "restricted_load",
    "restricted_loads",
    "safe_dump",
    "safe_dumps",
]

PICKLE_PROTOCOL = 4
#: A regular entry (journals written before command entries) carries at most a 60 KiB
#: command plus ~40 bytes of framing; command entries are never unpickled.
MAX_PICKLE_BYTES = 64 * 1024
#: Real entries hold about a dozen opcodes.
MAX_PICKLE_OPCODES = 64
#: Real entries nest two levels deep (a tuple in a tuple).
MAX_PICKLE_DEPTH = 8


class UnsafePickleError(pickle.UnpicklingError):
    """A pickle from a peer or from disk holds something a log entry never does; refused."""


# opcode -> (bytes of fixed argument, bytes of length prefix of a variable argument)
_ARGS: dict[int, tuple[int, int]] = {
    0x80: (1, 0),  # PROTO
    0x95: (8, 0),  # FRAME
    0x2E: (0, 0),  # STOP
    0x28: (0, 0),  # MARK
    0x4E: (0, 0),  # NONE
    0x88: (0, 0),  # NEWTRUE
    0x89: (0, 0),  # NEWFALSE
    0x4A: (4, 0),  # BININT
    0x4B: (1, 0),  # BININT1
    0x4D: (2, 0),  # BININT2
    0x8A: (0, 1),  # LONG1
    0x47: (8, 0),  # BINFLOAT
    0x43: (0, 1),  # SHORT_BINBYTES
    0x42: (0, 4),  # BINBYTES
    0x8C: (0, 1),  # SHORT_BINUNICODE
    0x58: (0, 4),  # BINUNICODE
    0x29: (0, 0),  # EMPTY_TUPLE
    0x85: (0, 0),  # TUPLE1
    0x86: (0, 0),  # TUPLE2
    0x87: (0, 0),  # TUPLE3
    0x74: (0, 0),  # TUPLE
    0x5D: (0, 0),  # EMPTY_LIST
    0x61: (0, 0),  # APPEND
    0x65: (0, 0),  # APPENDS
    0x94: (0, 0),  # MEMOIZE
    0x71: (1, 0),  # BINPUT (stores only; fetching is refused)
    0x72: (4, 0),  # LONG_BINPUT
}
_NAMES = {ord(op.code.encode("latin-1")): op.name for op in pickletools.opcodes}
_TUPLE_N = {0x85: 1, 0x86: 2, 0x87: 3}
_SCALARS = frozenset({0x4E, 0x88, 0x89, 0x4A, 0x4B, 0x4D, 0x8A, 0x47, 0x43, 0x42, 0x8C, 0x58})
_STORES = frozenset({0x80, 0x95, 0x94, 0x71, 0x72})  # PROTO, FRAME, memo stores: no effect


def _refuse(reason: str) -> UnsafePickleError:
    return UnsafePickleError(
        f"refused a pickle: {reason}; replicated entries hold only ints, floats, bools, None, "
        "bytes, str, tuples and lists, without shared references"
    )


class _Stack:
    """The unpickler's stack as the scan sees it: each object's nesting depth and kind."""

    def __init__(self) -> None:
        self.depths: list[int] = []
        self.is_list: list[bool] = []
        self.marks: list[int] = []

    def push(self, depth: int, is_list: bool) -> None:
        self.depths.append(depth)
        self.is_list.append(is_list)

    def floor(self) -> int:
        return self.marks[-1] if self.marks else 0

    def pop_from(self, first: int) -> int:
        """Remove the objects from ``first`` on; the deepest one's depth (0 when none)."""
        inner = max(self.depths[first:], default=0)
        del self.depths[first:], self.is_list[first:]
        return inner


_KINDS = {
    "a memo reference (shared object)": ("GET", "BINGET", "LONG_BINGET", "DUP"),
    "a dict": ("EMPTY_DICT", "DICT", "SETITEM", "SETITEMS"),
    "a set": ("EMPTY_SET", "ADDITEMS", "FROZENSET"),
    "a global or an object construction": (
        "GLOBAL", "STACK_GLOBAL", "INST", "OBJ", "REDUCE", "BUILD", "NEWOBJ", "NEWOBJ_EX",
        "EXT1", "EXT2", "EXT4", "PERSID", "BINPERSID",
    ),
}
_KIND_OF = {name: kind for kind, names in _KINDS.items() for name in names}


def _refused_opcode(data: bytes, op: int, pos: int) -> UnsafePickleError:
    name = _NAMES.get(op, "")
    kind = _KIND_OF.get(name, "an opcode real entries never hold")
    if name == "GLOBAL":  # its argument is "module\nname\n"
        words = data[pos + 1 : pos + 130].split(b"\n")[:2]
        kind += " " + ".".join(w.decode("latin-1") for w in words)[:120]
    return _refuse(f"{_at(op, pos)} is not allowed: {kind}")


def _at(op: int, pos: int) -> str:
    return f"{_NAMES.get(op, f'opcode 0x{op:02x}')} at byte {pos}"


def _step(stack: _Stack, op: int, pos: int) -> None:
    if op in _SCALARS:
        stack.push(0, False)
    elif op == 0x29 or op == 0x5D:  # EMPTY_TUPLE, EMPTY_LIST
        stack.push(1, op == 0x5D)
    elif op == 0x28:  # MARK
        stack.marks.append(len(stack.depths))
    elif op in _TUPLE_N or op == 0x74:  # TUPLE1..3, TUPLE
        if op == 0x74:
            if not stack.marks:
                raise _refuse(f"{_at(op, pos)} has no MARK")
            first = stack.marks.pop()
        else:
            first = len(stack.depths) - _TUPLE_N[op]
            if first < stack.floor():
                raise _refuse(f"{_at(op, pos)} lacks items")
        stack.push(stack.pop_from(first) + 1, False)
    elif op == 0x61 or op == 0x65:  # APPEND, APPENDS
        if op == 0x65:
            if not stack.marks:
                raise _refuse(f"{_at(op, pos)} has no MARK")
            first = stack.marks.pop()
        else:
            first = len(stack.depths) - 1
        if first - 1 < stack.floor() or not stack.is_list[first - 1]:
            raise _refuse(f"{_at(op, pos)} does not extend a list")
        inner = stack.pop_from(first)
        stack.depths[-1] = max(stack.depths[-1], inner + 1)
    if stack.depths and stack.depths[-1] > MAX_PICKLE_DEPTH:
        raise _refuse(f"nesting deeper than {MAX_PICKLE_DEPTH} levels ({_at(op, pos)})")


def scan(data: bytes) -> None:
    """Raise :class:`UnsafePickleError` unless ``data`` is exactly one pickle of plain values."""
    size = len(data)
    if size > MAX_PICKLE_BYTES:
        raise _refuse(f"{size} bytes exceed the {MAX_PICKLE_BYTES}-byte limit")
    stack = _Stack()
    pos = 0
    for _ in range(MAX_PICKLE_OPCODES):
        if pos >= size:
            raise _refuse("it ends without a STOP opcode")
        op = data[pos]
        spec = _ARGS.get(op)
        if spec is None:
            raise _refused_opcode(data, op, pos)
        start = pos
        fixed, prefix = spec
        pos += 1 + fixed + prefix
        if prefix:
            pos += int.from_bytes(data[pos - prefix : pos], "little")
        if pos > size:
            raise _refuse(f"{_at(op, start)} runs past the end")
        if op == 0x2E:  # STOP
            if len(stack.depths) != 1 or stack.marks or pos != size:
                raise _refuse(f"{_at(op, start)} does not end exactly one value")
            return
        if op not in _STORES:
            _step(stack, op, start)
    raise _refuse(f"more than {MAX_PICKLE_OPCODES} opcodes")


class _RestrictedUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        raise _refuse(f"global {module}.{name}")


def restricted_loads(data: bytes | bytearray | memoryview | str) -> Any:
    """Scan, then unpickle plain values only; anything else raises :class:`UnsafePickleError`."""
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    scan(raw)
    try:
        return _RestrictedUnpickler(io.BytesIO(raw)).load()
    except UnsafePickleError:
        raise
    except Exception as exc:  # the scan passed, so this is a malformed argument
        raise _refuse(f"malformed pickle ({type(exc).__name__})") from None


def restricted_load(file: Any) -> Any:
    """:func:`restricted_loads` over the rest of ``file`` (which must hold one pickle)."""
    return restricted_loads(file.read(MAX_PICKLE_BYTES + 1))


def safe_dumps(obj: Any, protocol: int | None = None) -> bytes:
    return pickle.dumps(obj, PICKLE_PROTOCOL)


def safe_dump(obj: Any, file: Any, protocol: int | None = None) -> None:
    pickle.dump(obj, file, PICKLE_PROTOCOL)
