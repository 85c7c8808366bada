"""Capability handshake: fixture replay, negotiation rules, decoder leniency and fuzzing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import cbor2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lazily_transports import (
    HandshakeError,
    IncompatiblePeerError,
    PeerRejectedError,
)
from lazily_transports._core._handshake import (
    HANDSHAKE_FRAME_LIMIT,
    Handshake,
    Hello,
    decode_message,
    negotiate,
)

ROOT = Path(__file__).resolve().parents[2]
OWN_CASES = ROOT / "fixtures" / "codec" / "capability_handshake_cases.json"


def _scenarios(path: Path) -> list[dict[str, Any]]:
    document = json.loads(path.read_text())
    assert document["kind"] == "CapabilityHandshake"
    scenarios: list[dict[str, Any]] = document["scenarios"]
    assert scenarios, f"{path} has no scenarios"
    return scenarios


def _outcome(local_map: dict[str, Any], remote_map: dict[str, Any]) -> dict[str, Any]:
    local = Handshake.from_mapping(local_map)
    remote = Handshake.from_mapping(remote_map)
    required = frozenset(local_map.get("required_features", []))
    try:
        result = negotiate(local, remote, required_features=required)
    except IncompatiblePeerError as exc:
        return {"compatible": False, "field": exc.field}
    return {
        "compatible": True,
        "negotiated_max_frame_size": result.max_frame_size,
        "negotiated_fragmentation_supported": result.fragmentation_supported,
    }


def _replay(scenario: dict[str, Any]) -> None:
    assert _outcome(scenario["local"], scenario["remote"]) == scenario["expected"], scenario["id"]
    if "required_features" not in scenario["local"]:
        # Without local-only requirements the rules are symmetric.
        mirrored = _outcome(scenario["remote"], scenario["local"])
        assert mirrored == scenario["expected"], f"{scenario['id']} (mirrored)"


@pytest.mark.parametrize("scenario", _scenarios(OWN_CASES), ids=lambda s: s["id"])
def test_project_handshake_cases_replay(scenario: dict[str, Any]) -> None:
    _replay(scenario)


def test_project_cases_cover_every_failing_field() -> None:
    fields = {s["expected"].get("field") for s in _scenarios(OWN_CASES)} - {None}
    assert fields == {
        "protocol_id",
        "protocol_major_version",
        "codec",
        "ordered_reliable",
        "max_frame_size",
        "session_id",
        "features",
    }


def test_spec_handshake_fixture_replays(spec_fixtures: Path | None) -> None:
    if spec_fixtures is None:
        pytest.skip("LAZILY_SPEC_FIXTURES is not set")
    scenarios = _scenarios(spec_fixtures / "codec" / "capability_handshake.json")
    for scenario in scenarios:
        _replay(scenario)


def _base(**changes: Any) -> dict[str, Any]:
    mapping: dict[str, Any] = {
        "protocol_id": "lazily-ipc",
        "protocol_major_version": 1,
        "codec": "cbor",
        "max_frame_size": 4096,
        "peer_id": 3,
        "session_id": "s",
    }
    mapping.update(changes)
    return mapping


def test_decoder_defaults_for_optional_fields() -> None:
    handshake = Handshake.from_mapping(_base())
    assert handshake.fragmentation_supported is False
    assert handshake.ordered_reliable is True
    assert handshake.features == frozenset()


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("peer_id", -1),
        ("peer_id", 2**64),
        ("peer_id", True),
        ("peer_id", "3"),
        ("max_frame_size", -5),
        ("max_frame_size", 1.5),
        ("session_id", 7),
        ("features", "raft-queue-v1"),
        ("features", [1, 2]),
        ("ordered_reliable", 1),
        ("fragmentation_supported", "yes"),
        ("codec", None),
    ],
)
def test_decoder_rejects_mistyped_fields_naming_them(field: str, value: Any) -> None:
    with pytest.raises(HandshakeError) as info:
        Handshake.from_mapping(_base(**{field: value}))
    assert info.value.field == field


@pytest.mark.parametrize(
    "field", ["protocol_id", "protocol_major_version", "codec", "max_frame_size", "peer_id"]
)
def test_decoder_requires_core_fields(field: str) -> None:
    mapping = _base()
    del mapping[field]
    with pytest.raises(HandshakeError, match="missing") as info:
        Handshake.from_mapping(mapping)
    assert info.value.field == field


def test_hello_round_trips_through_cbor() -> None:
    hello = Hello(Handshake.from_mapping(_base(features=["a", "b"])), b"n" * 32, "hmac-sha256")
    assert Hello.decode(hello.encode()) == hello


def test_hello_rejects_short_nonce_and_unknown_auth_mode() -> None:
    handshake = Handshake.from_mapping(_base())
    with pytest.raises(HandshakeError) as info:
        Hello.decode(Hello(handshake, b"short", "none").encode())
    assert info.value.field == "nonce"
    with pytest.raises(HandshakeError) as info:
        Hello.decode(Hello(handshake, b"n" * 32, "rot13").encode())
    assert info.value.field == "auth"


def test_peer_refusal_frame_raises_peer_rejected() -> None:
    frame = cbor2.dumps({"error": "session_id", "message": "wrong cluster"})
    with pytest.raises(PeerRejectedError, match="wrong cluster") as info:
        decode_message(frame)
    assert info.value.field == "session_id"
    with pytest.raises(PeerRejectedError) as info:
        decode_message(cbor2.dumps({"error": "", "message": 7}))
    assert info.value.field == "unspecified"


def test_oversized_and_non_map_messages_are_rejected() -> None:
    with pytest.raises(HandshakeError, match="exceeds"):
        decode_message(b"\x00" * (HANDSHAKE_FRAME_LIMIT + 1))
    with pytest.raises(HandshakeError, match="expected a CBOR map"):
        decode_message(cbor2.dumps([1, 2, 3]))
    with pytest.raises(HandshakeError, match="malformed CBOR"):
        decode_message(b"\xff\xff\xff")


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=512))
def test_fuzz_hello_decoder_raises_only_handshake_errors(data: bytes) -> None:
    try:
        hello = Hello.decode(data)
    except HandshakeError:
        return
    assert isinstance(hello.handshake, Handshake)


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8) | st.binary(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(
            [
                "protocol_id",
                "protocol_major_version",
                "codec",
                "max_frame_size",
                "peer_id",
                "session_id",
                "features",
                "ordered_reliable",
                "fragmentation_supported",
                "nonce",
                "auth",
                "error",
                "junk",
            ]
        ),
        _json_values,
    )
)
def test_fuzz_structured_hello_maps(overrides: dict[str, Any]) -> None:
    mapping = {**_base(), "nonce": b"n" * 32, "auth": "none", **overrides}
    try:
        hello = Hello.decode(cbor2.dumps(mapping))
    except HandshakeError as exc:
        assert exc.field
        return
    assert 0 <= hello.handshake.peer_id < 2**64
    assert hello.handshake.max_frame_size >= 0


def _shared_dag_key(depth: int) -> bytes:
    node: list[Any] = ["x"]
    for _ in range(depth):
        node = [node, node]
    return b"\xa1" + cbor2.dumps(node, value_sharing=True) + b"\x01"


@pytest.mark.parametrize(
    ("frame", "cause"),
    [
        (_shared_dag_key(5), "tag 28"),
        (_shared_dag_key(64), "depth"),
        (b"\x81" * 10_000 + b"\x00", "depth"),
        (cbor2.dumps({"peer_id": 1, "x": cbor2.CBORTag(30, [1, 3])}), "tag 30"),
        (cbor2.dumps({1: "a"}), "map key"),
        (b"\xbf\x61a\x01\xff", "indefinite"),
    ],
    ids=["shared-dag", "deep-shared-dag", "deep", "fraction-tag", "int-key", "indefinite"],
)
def test_hostile_messages_are_refused_naming_the_cause(frame: bytes, cause: str) -> None:
    with pytest.raises(HandshakeError) as info:
        decode_message(frame)
    assert info.value.field == "handshake"
    assert cause in info.value.message
