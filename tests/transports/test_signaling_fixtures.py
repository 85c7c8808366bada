"""Signaling fixture replay: project-owned cases always, upstream cases with LAZILY_SPEC_FIXTURES.

Kinds: SignalingFrames (typed <-> canonical JSON wire, rejects refused) and
SignalingSession (RoomCore transcript; broadcast order within a step is not claimed).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from lazily_transports.webrtc.signaling import (
    Error,
    Permissions,
    RoomCore,
    SignalingFrameError,
    decode_client_frame,
    decode_server_frame,
    dumps,
    encode_frame,
    loads,
)

_VARIANT_TAGS = {"join", "offer", "answer", "ice", "relay", "leave", "welcome"}
_VARIANT_TAGS |= {"peer-joined", "peer-left", "error"}


def load(path: Path) -> dict[str, Any]:
    with path.open(encoding="utf-8") as fh:
        doc: dict[str, Any] = json.load(fh)
    return doc


def replay(doc: dict[str, Any]) -> int:
    """Replay one fixture document; returns the number of cases checked."""
    kind = doc.get("kind")
    if kind == "SignalingFrames":
        return replay_frames(doc)
    if kind == "SignalingSession":
        return replay_session(doc)
    pytest.fail(f"unknown signaling fixture kind {kind!r}")


def _decode(direction: str, wire: object) -> Any:
    if direction == "client":
        return decode_client_frame(wire)
    assert direction == "server", direction
    return decode_server_frame(wire)


def _check_assertions(label: str, frame: Any, wire: dict[str, Any], claims: dict[str, Any]) -> None:
    for key, want in claims.items():
        if key in ("peer", "to", "peers", "code", "capabilities"):
            got = getattr(frame, key)
            got = list(got) if isinstance(got, tuple) else got
            assert got == want, f"{label}: {key} = {got!r}, want {want!r}"
        elif key == "from":
            assert frame.from_ == want, f"{label}: from = {frame.from_!r}, want {want!r}"
        elif key == "has_capabilities":
            assert (frame.capabilities is not None) == want, label
        elif key == "roster_excludes_self":
            assert (frame.peer not in frame.peers) == want, label
        elif key == "server_stamped_from":
            assert ("from" in wire and "to" not in wire) == want, label
        else:
            pytest.fail(f"{label}: unknown assertion {key!r}")


def replay_frames(doc: dict[str, Any]) -> int:
    for case in doc["frames"]:
        label, wire = case["label"], case["wire"]
        frame = _decode(case["direction"], wire)
        assert case["variant"] in _VARIANT_TAGS, label
        encoded = encode_frame(frame)
        assert encoded["type"] == case["variant"], label
        assert encoded == wire, f"{label}: encodes to {encoded}, want {wire}"
        assert list(encoded) == list(wire), f"{label}: key order {list(encoded)}"
        assert _decode(case["direction"], loads(dumps(frame))) == frame, label
        _check_assertions(label, frame, wire, case.get("assertions", {}))
    for case in doc["rejects"]:
        with pytest.raises(SignalingFrameError):
            _decode(case["direction"], case["wire"])
            pytest.fail(f"reject {case['label']!r} was accepted")
    return len(doc["frames"]) + len(doc["rejects"])


def _permissions(doc: dict[str, Any]) -> Permissions:
    mode = doc.get("mode", "open")
    if mode == "open":
        assert "allow" not in doc
        return Permissions()
    assert mode == "allowlist", mode
    pairs: dict[int, set[int]] = {}
    for sender, target in doc.get("allow", []):
        pairs.setdefault(sender, set()).add(target)
    return Permissions.allowlist(pairs, symmetric=False)


def _canonical(frame: object) -> str:
    return json.dumps(frame, sort_keys=True, separators=(",", ":"))


def _room_after(doc: dict[str, Any], steps: int) -> RoomCore[str]:
    room: RoomCore[str] = RoomCore(_permissions(doc))
    for step in doc["steps"][:steps]:
        room.feed_wire(step["input"]["conn"], step["input"]["recv"])
    return room


def replay_session(doc: dict[str, Any]) -> int:
    for key in doc.get("assertions", {}):
        assert key in {
            "roster_excludes_self",
            "forwarded_from_is_server_registered",
            "roster_sorted_ascending",
        }, f"unknown session assertion {key!r}"
    room = _room_after(doc, 0)
    for index, step in enumerate(doc["steps"]):
        conn, recv = step["input"]["conn"], step["input"]["recv"]
        outputs = room.feed_wire(conn, recv)
        got = Counter((to, _canonical(encode_frame(frame))) for to, frame in outputs)
        want = Counter((e["to"], _canonical(e["frame"])) for e in step["expect"])
        assert got == want, f"step {index} ({recv}): got {sorted(got)}, want {sorted(want)}"
    # A reject must be refused in every reachable state: nothing reaches another
    # connection and the roster does not move.
    for case in doc.get("rejects", []):
        conn, recv = case["input"]["conn"], case["input"]["recv"]
        for steps in range(len(doc["steps"]) + 1):
            room = _room_after(doc, steps)
            before = (room.peers, room.peer_of(conn))
            outputs = room.feed_wire(conn, recv)
            assert outputs, f"reject {case['label']!r} produced no error after {steps} steps"
            for to, frame in outputs:
                assert to == conn and isinstance(frame, Error), (
                    f"reject {case['label']!r} after {steps} steps delivered {frame} to {to!r}"
                )
            assert (room.peers, room.peer_of(conn)) == before, case["label"]
    return len(doc["steps"]) + len(doc.get("rejects", []))


PROJECT_FIXTURES = sorted(
    (Path(__file__).resolve().parents[2] / "fixtures" / "signaling").glob("*.json")
)


def test_project_fixtures_exist() -> None:
    names = {p.name for p in PROJECT_FIXTURES}
    assert {"frames_edge_cases.json", "allowlist_session.json"} <= names


@pytest.mark.parametrize("path", PROJECT_FIXTURES, ids=lambda p: p.stem)
def test_project_fixture(path: Path) -> None:
    assert replay(load(path)) > 0


def test_spec_fixtures(spec_fixtures: Path | None) -> None:
    if spec_fixtures is None:
        pytest.skip("LAZILY_SPEC_FIXTURES is not set")
    directory = spec_fixtures / "signaling"
    paths = sorted(directory.glob("*.json"))
    assert {p.name for p in paths} >= {"frames.json", "anti_spoof_session.json"}, directory
    counts = {p.name: replay(load(p)) for p in paths}
    frames = load(directory / "frames.json")
    assert (len(frames["frames"]), len(frames["rejects"])) == (17, 3)
    assert counts["anti_spoof_session.json"] == 9
