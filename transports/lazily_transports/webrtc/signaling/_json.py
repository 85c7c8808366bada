"""Bounds a signaling frame's JSON text must meet before and while it is parsed.

The size and nesting depth are checked on the raw text with C-speed passes (byte
counts, two regular-expression substitutions, a byte translation and one match); the
number of digits of each integer is checked as ``json`` parses it.
"""

from __future__ import annotations

import re

__all__ = ["MAX_DEPTH", "MAX_FRAME_BYTES", "MAX_INT_DIGITS", "JSONLimitError", "check", "parse_int"]

#: Largest frame text, in UTF-8 bytes (the server's default WebSocket message limit).
MAX_FRAME_BYTES = 1 << 20
#: Deepest nesting of arrays and objects.
MAX_DEPTH = 32
#: Most digits of one integer (peer ids need 16).
MAX_INT_DIGITS = 64

_ESCAPE = re.compile(rb"\\.", re.DOTALL)
_STRING = re.compile(rb'"[^"]*"')
_NOT_BRACKET = bytes(c for c in range(256) if c not in b"[]{}")


def _nested(depth: int) -> re.Pattern[bytes]:
    """Balanced brackets nested at most ``depth`` deep, as a pattern without backtracking."""
    group = rb"[\[{][\]}]"
    for _ in range(depth - 1):
        group = rb"[\[{](?:" + group + rb")*+[\]}]"
    return re.compile(rb"(?:" + group + rb")*+")


_WITHIN_DEPTH = _nested(MAX_DEPTH)


class JSONLimitError(ValueError):
    """A frame's text is over a size, depth or digit bound; the message says which."""


def check(text: str, *, max_bytes: int = MAX_FRAME_BYTES) -> None:
    """Raise :class:`JSONLimitError` if ``text`` is too large or nests too deep.

    Exact for valid JSON (escapes, then strings, are removed before brackets are
    counted); invalid JSON may be reported as too deep, and fails to parse anyway.
    """
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) > max_bytes:
        raise JSONLimitError(f"frame of {len(raw)} bytes exceeds the {max_bytes}-byte limit")
    if raw.count(b"[") + raw.count(b"{") <= MAX_DEPTH:
        return
    brackets = _STRING.sub(b"", _ESCAPE.sub(b"", raw)).translate(None, _NOT_BRACKET)
    if _WITHIN_DEPTH.fullmatch(brackets) is None:
        raise JSONLimitError(
            f"arrays and objects nest deeper than {MAX_DEPTH} levels (or are unbalanced)"
        )


def parse_int(digits: str) -> int:
    """``json``'s integer hook: refuses more than :data:`MAX_INT_DIGITS` digits."""
    if len(digits.lstrip("-")) > MAX_INT_DIGITS:
        raise JSONLimitError(
            f"integer of {len(digits)} characters exceeds {MAX_INT_DIGITS} digits"
        )
    return int(digits)
