"""Decoder benchmark: CPU per frame for normal traffic and for hostile inputs of the largest
size each decoder accepts.

    python benchmarks/decoders.py [--json] [--quick]

For every decoder of bytes from outside (handshake hello, Raft frame, a client's request
frame, replicated command, snapshot, PySyncObj pickle, signaling JSON) it prints the CPU
microseconds per call for normal inputs (for CBOR also the profile's ``loads`` alone and plain
``cbor2.loads`` on the same bytes, since the decoders validate as well) and, over
crafted hostile inputs (bombs, floods of small items, the costliest allowed tags), the
median and worst microseconds per call and the CPU nanoseconds per input byte.
Hostile inputs are built at each decoder's size limit (snapshots at 4 MiB: their cost
is linear). Plain ``cbor2.loads`` on small shared-reference bombs and the producer's
check of a proposed op are shown too. With ``--json`` the last line printed is one
JSON object with every figure.
"""

from __future__ import annotations

import argparse
import decimal
import functools
import json
import statistics
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import cbor2
from lazily_transports._core._handshake import (
    HANDSHAKE_FRAME_LIMIT,
    Handshake,
    Hello,
    decode_message,
)
from lazily_transports.config import LinkConfig
from lazily_transports.safe_cbor import PROTOCOL, VALUES, CBORProfile
from lazily_transports.webrtc.signaling import loads as signaling_loads
from lazily_transports.webrtc.signaling._frames import MAX_FRAME_BYTES as SIGNALING_BYTES

from lazily_queue.client import protocol as client_protocol
from lazily_queue.client.frame_decoding import FrameDecoder, request_limit
from lazily_queue.raft import batch, patches
from lazily_queue.raft.codec import MAX_FRAME_BYTES, decode_frame, encode_frames
from lazily_queue.raft.engine import MAX_COMMAND_BYTES
from lazily_queue.raft.safe_pickle import MAX_PICKLE_BYTES, restricted_loads
from lazily_queue.raft.snapshot import decode_snapshot, encode_snapshot
from lazily_queue.replicated.ops import QUEUE_PUSH

SNAPSHOT_BYTES = 4 * 1024 * 1024


def cpu_per_call(fn: Callable[[bytes], Any], data: Any, budget: float) -> float:
    """CPU seconds per call of ``fn(data)`` (exceptions count as calls), over ``budget`` s."""
    calls = 0
    start = time.process_time()
    deadline = start + budget
    while True:
        try:
            fn(data)
        except Exception:
            pass
        calls += 1
        now = time.process_time()
        if now >= deadline and calls >= 3:
            return (now - start) / calls


def _head(major: int, n: int) -> bytes:
    if n < 24:
        return bytes([major << 5 | n])
    for info, width in ((24, 1), (25, 2), (26, 4), (27, 8)):
        if n < 1 << (8 * width):
            return bytes([major << 5 | info]) + n.to_bytes(width, "big")
    raise ValueError(n)


def _fill(item: bytes, size: int, tail: bytes = b"") -> bytes:
    """An array of as many copies of ``item`` as fit in ``size`` bytes, then ``tail``."""
    count = max(1, (size - 9 - len(tail)) // len(item))
    return _head(4, count + (1 if tail else 0)) + item * count + tail


def _dag(depth: int) -> bytes:
    node: list[Any] = ["x"]
    for _ in range(depth):
        node = [node, node]
    return b"\xa1" + cbor2.dumps(node, value_sharing=True) + b"\x01"


def hostile_cbor(size: int, values: bool) -> dict[str, bytes]:
    """Inputs of about ``size`` bytes that cost the most before being refused or accepted."""
    refused_tail = cbor2.dumps(cbor2.CBORTag(28, 0))
    keys = b"".join(cbor2.dumps(f"{i:x}") + b"\x00" for i in range(size // 8))
    cases = {
        "shared-dag-key (depth 29)": _dag(29),
        "deep nesting": b"\x81" * (size - 1) + b"\x00",
        "ints then refused tag": _fill(b"\x00", size, refused_tail),
        "empty arrays then refused tag": _fill(b"\x80", size, refused_tail),
        "tiny maps then refused tag": _fill(b"\xa1\x61a\x00", size, refused_tail),
        "distinct string keys": _head(5, size // 8) + keys,
        "chains at max depth": _fill(b"\x81" * 14 + b"\x00", size),
        "floats": _fill(cbor2.dumps(1.1), size),
        "strings": _fill(cbor2.dumps("abcdefgh"), size),
        "declared length 2^63": b"\x9b" + (2**63).to_bytes(8, "big") + b"\x00" * (size - 9),
    }
    if values:
        big = 2 ** (8 * 512) - 1
        cases.update({
            "bignums (4096 bits)": _fill(cbor2.dumps(big), size),
            "bignums of 3 bytes": _fill(b"\xc2\x41\x01", size),
            "decimals (256 digits)": _fill(cbor2.dumps(decimal.Decimal("9" * 256 + "E-6")), size),
            "datetimes": _fill(cbor2.dumps(datetime(2024, 1, 1, tzinfo=UTC)), size),
            "epoch datetimes": _fill(cbor2.dumps(cbor2.CBORTag(1, 1.5)), size),
            "epoch datetimes of 2 bytes": _fill(b"\xc1\x01", size),
            "uuids": _fill(cbor2.dumps(uuid.UUID(int=1)), size),
            "dates": _fill(cbor2.dumps(cbor2.CBORTag(100, 19000)), size),
            "string sets": _fill(cbor2.dumps(frozenset({"a", "b", "c"})), size),
            "empty sets": _fill(b"\xd9\x01\x02\x80", size),
        })
    return cases


def hostile_json(size: int) -> dict[str, str]:
    half = size // 2
    return {
        "deep brackets": "[" * half + "]" * half,
        "flat empty arrays": "[" + "[]," * (size // 3 - 1) + "[]]",
        "depth-32 chains": "[" + ",".join(["[" * 31 + "]" * 31] * (size // 63)) + "]",
        "escaped strings": json.dumps(['\\"[' * 8] * (size // 44 - 1)),
        "many strings": json.dumps(["["] * (size // 6)),
        "long integers": "[" + ",".join(["9" * 64] * (size // 65)) + "]",
        "oversized integer": "[" + "9" * (size - 2) + "]",
    }


def hostile_pickles() -> dict[str, bytes]:
    memo = bytearray(b"\x80\x04\x8c\x01x\x85\x94")
    for index in range(29):
        memo += b"h" + bytes([index]) + b"h" + bytes([index]) + b"\x86\x94"
    return {
        "memo DAG in a dict": bytes(memo) + b"}h\x1dK\x01s.",
        "opcode flood": b"\x80\x04" + b"K\x01" * (MAX_PICKLE_BYTES // 2 - 2) + b".",
        "largest bytes": patches.safe_dumps((7, (b"x" * (MAX_PICKLE_BYTES - 64), 1))),
        "invalid UTF-8": b"\x80\x04X" + (MAX_PICKLE_BYTES - 16).to_bytes(4, "little")
        + b"\xff" * (MAX_PICKLE_BYTES - 16) + b".",
        "63 opcodes then refused": b"\x80\x04" + b"N" * 61 + b"}.",
    }


def normal_inputs() -> dict[str, dict[str, Any]]:
    link = LinkConfig(peer_id=1, session_id="s", secret=b"s" * 32)
    hello = Hello(Handshake.from_config(link), b"n" * 32, "hmac-sha256").encode()
    entries = [(batch.encode_command(5, 1, [[i, QUEUE_PUSH, "jobs", b"p" * 200]]), 100 + i, 3)
               for i in range(10)]
    append = {"type": "append_entries", "term": 3, "commit_index": 99, "prevLogIdx": 99,
              "prevLogTerm": 3, "entries": entries}
    heartbeat = {"type": "append_entries", "term": 3, "commit_index": 99, "prevLogIdx": 99,
                 "prevLogTerm": 3}
    vote = {"type": "response_vote", "term": 3}
    one = batch.encode_command(5, 1, [[1, QUEUE_PUSH, "jobs", {"id": 7, "body": "x" * 100}]])
    fifty = batch.encode_command(5, 1, [[i, QUEUE_PUSH, "jobs", b"p" * 100] for i in range(50)])
    state = {"format": 1, "now": 1, "queues": {"jobs": [None, False, [b"p" * 100] * 1000]},
             "addresses": {}, "sessions": {}}
    snap = encode_snapshot({"format": 1, "state": state, "last": [b"", 5, 1],
                            "prev": [b"", 4, 1], "members": ["1", "2", "3"]})
    offer = json.dumps({"type": "offer", "to": 5, "sdp": "v=0\r\n" * 100})
    return {
        "handshake": {"hello": hello},
        "raft frame": {"append_entries (10 x 200 B)": encode_frames([append])[0],
                       "heartbeat": encode_frames([heartbeat])[0],
                       "response_vote": encode_frames([vote])[0]},
        "client frame": {"push of 200 B": client_protocol.encode(
            [2, client_protocol.OP, 1, 1, QUEUE_PUSH, ["jobs", b"p" * 200], 5000])},
        "command": {"1 push": one, "50 pushes": fifty},
        "snapshot": {"1000 queued elements": snap},
        "pickle": {"regular entry": patches.safe_dumps((7, (one, 1_712_345_678_901))),
                   "membership": patches.safe_dumps(["add", "4"])},
        "signaling": {"offer": offer},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    parser.add_argument("--quick", action="store_true", help="shorter measurements")
    args = parser.parse_args()
    budget = 0.05 if args.quick else 0.3
    patches.install()

    profiles: dict[str, CBORProfile] = {
        "handshake": PROTOCOL, "raft frame": PROTOCOL, "client frame": VALUES, "command": VALUES,
        "snapshot": VALUES,
    }
    client = FrameDecoder(request_limit(batch.DEFAULT_MAX_MESSAGE_BYTES), "benchmark")
    client_decode = functools.partial(client_protocol.decode, max_bytes=client.max_bytes,
                                      max_tags=client.max_tags)
    decoders: dict[str, tuple[Callable[[Any], Any], dict[str, Any]]] = {
        "handshake": (decode_message, hostile_cbor(HANDSHAKE_FRAME_LIMIT, values=False)),
        "raft frame": (decode_frame, hostile_cbor(MAX_FRAME_BYTES, values=False)),
        "client frame": (client_decode, hostile_cbor(client.max_bytes, values=True)),
        "command": (batch.decode_command, hostile_cbor(batch.MAX_BATCH_BYTES, values=True)),
        "snapshot": (decode_snapshot, hostile_cbor(SNAPSHOT_BYTES, values=True)),
        "pickle": (restricted_loads, hostile_pickles()),
        "signaling": (signaling_loads, hostile_json(SIGNALING_BYTES)),
    }
    normal = normal_inputs()
    figures: dict[str, Any] = {}
    for name, (fn, hostile) in decoders.items():
        print(f"{name}:")
        entry: dict[str, Any] = {"normal_us": {}, "hostile_us": {}, "hostile_ns_per_byte": {}}
        for label, data in normal[name].items():
            us = cpu_per_call(fn, data, budget) * 1e6
            entry["normal_us"][label] = round(us, 2)
            line = f"  normal  {label:<32} {len(data):>9} B {us:>10.2f} us"
            profile = profiles.get(name)
            if profile is not None:
                body = data[8:] if name == "snapshot" else data  # after magic and CRC
                alone = cpu_per_call(functools.partial(_profile_loads, profile), body,
                                     budget) * 1e6
                plain = cpu_per_call(cbor2.loads, body, budget) * 1e6
                entry.setdefault("profile_loads_us", {})[label] = round(alone, 2)
                entry.setdefault("plain_cbor2_us", {})[label] = round(plain, 2)
                line += f"  (of which {profile.name}.loads {alone:.2f} us; plain cbor2 {plain:.2f})"
            print(line)
        for label, data in hostile.items():
            seconds = cpu_per_call(fn, data, budget)
            entry["hostile_us"][label] = round(seconds * 1e6, 1)
            entry["hostile_ns_per_byte"][label] = round(seconds * 1e9 / len(data), 2)
            print(f"  hostile {label:<32} {len(data):>9} B {seconds * 1e6:>10.1f} us "
                  f"{seconds * 1e9 / len(data):>7.2f} ns/B")
        costs = list(entry["hostile_us"].values())
        entry["hostile_median_us"] = statistics.median(costs)
        entry["hostile_worst_us"] = max(costs)
        entry["hostile_worst_ns_per_byte"] = max(entry["hostile_ns_per_byte"].values())
        print(f"  hostile median {entry['hostile_median_us']:.1f} us, worst "
              f"{entry['hostile_worst_us']:.1f} us, worst {entry['hostile_worst_ns_per_byte']} "
              "ns/B")
        figures[name] = entry

    print("reference: plain cbor2.loads on shared-reference map-key bombs")
    reference: dict[str, float] = {}
    for depth in (16, 18, 20):
        bomb = _dag(depth)
        ms = cpu_per_call(cbor2.loads, bomb, budget) * 1e3
        reference[f"depth {depth} ({len(bomb)} B)"] = round(ms, 2)
        print(f"  depth {depth:<3} {len(bomb):>5} B {ms:>9.2f} ms (doubles per level)")
    figures["plain_cbor2_dag_bomb_ms"] = reference

    print("producer: encode_op alone vs encode_checked_op (encode, nesting walk, decode check)")
    producer: dict[str, dict[str, float]] = {}
    ops = {
        "push of 100 B": ["jobs", b"p" * 100],
        "push of a 20-field dict": ["jobs", {f"f{i}": i for i in range(20)}],
        "push of 5000 ints": ["jobs", list(range(5000))],
        "push of 45-deep value": ["jobs", _nest(44)],
    }
    for label, op_args in ops.items():
        plain = cpu_per_call(lambda a: batch.encode_op(1, QUEUE_PUSH, a), op_args, budget) * 1e6
        checked = cpu_per_call(
            lambda a: batch.encode_checked_op(1, QUEUE_PUSH, a, max_bytes=MAX_COMMAND_BYTES,
                                              name="queue_push"),
            op_args, budget) * 1e6
        producer[label] = {"encode_us": round(plain, 2), "checked_us": round(checked, 2)}
        print(f"  {label:<28} encode {plain:>8.2f} us   checked {checked:>8.2f} us")
    figures["producer"] = producer
    if args.json:
        print(json.dumps(figures))


def _profile_loads(profile: CBORProfile, data: bytes) -> Any:
    return profile.loads(data, max_bytes=len(data))


def _nest(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


if __name__ == "__main__":
    main()
