"""LinkConfig validation and the reconnect backoff schedule."""

from __future__ import annotations

from typing import Any

import pytest
from lazily_transports import DEFAULT_FEATURES, LinkConfig
from lazily_transports._core._backoff import Backoff


def test_defaults() -> None:
    config = LinkConfig(peer_id=1, session_id="c", secret=b"k")
    assert config.max_frame_size == 16 * 1024 * 1024
    assert "raft-queue-v1" in config.features
    assert config.features == DEFAULT_FEATURES
    assert config.required_features == frozenset()
    assert config.allow_unauthenticated is False


def test_missing_secret_requires_explicit_opt_in() -> None:
    with pytest.raises(ValueError, match="allow_unauthenticated=True"):
        LinkConfig(peer_id=1, session_id="c", secret=None)
    config = LinkConfig(peer_id=1, session_id="c", secret=None, allow_unauthenticated=True)
    assert config.secret is None


@pytest.mark.parametrize(
    ("overrides", "error", "pattern"),
    [
        ({"peer_id": -1}, ValueError, "unsigned 64-bit"),
        ({"peer_id": 2**64}, ValueError, "unsigned 64-bit"),
        ({"peer_id": "1"}, TypeError, "peer_id must be an int"),
        ({"peer_id": True}, TypeError, "peer_id must be an int"),
        ({"session_id": ""}, ValueError, "session_id"),
        ({"secret": b""}, ValueError, "non-empty bytes"),
        ({"secret": "text"}, ValueError, "non-empty bytes"),
        ({"max_frame_size": 0}, ValueError, "max_frame_size"),
        ({"max_frame_size": 2**32}, ValueError, "max_frame_size"),
        ({"handshake_timeout": 0}, ValueError, "handshake_timeout"),
        ({"send_buffer_size": 0}, ValueError, "send_buffer_size"),
        ({"features": "raft-queue-v1"}, TypeError, "collection of strings"),
        ({"required_features": [""]}, TypeError, "non-empty strings"),
    ],
)
def test_invalid_values_are_refused_clearly(
    overrides: dict[str, Any], error: type[Exception], pattern: str
) -> None:
    values: dict[str, Any] = {"peer_id": 1, "session_id": "c", "secret": b"k"}
    values.update(overrides)
    with pytest.raises(error, match=pattern):
        LinkConfig(**values)


def test_feature_iterables_become_frozensets() -> None:
    config = LinkConfig(
        peer_id=1,
        session_id="c",
        secret=b"k",
        features=["a", "b"],  # type: ignore[arg-type]
        required_features={"a"},  # type: ignore[arg-type]
    )
    assert config.features == frozenset({"a", "b"})
    assert config.required_features == frozenset({"a"})


def test_backoff_grows_exponentially_to_the_cap_and_resets() -> None:
    backoff = Backoff(initial=0.1, maximum=0.5, factor=2.0, jitter=0.0)
    assert [round(backoff.next(), 3) for _ in range(5)] == [0.1, 0.2, 0.4, 0.5, 0.5]
    backoff.reset()
    assert backoff.next() == pytest.approx(0.1)


def test_backoff_jitter_only_shortens_delays() -> None:
    values = iter([0.0, 1.0, 0.5])
    backoff = Backoff(initial=1.0, maximum=1.0, jitter=0.5, rng=lambda: next(values))
    assert [backoff.next() for _ in range(3)] == [1.0, 0.5, 0.75]


@pytest.mark.parametrize(
    "kwargs", [{"initial": 0}, {"initial": 2, "maximum": 1}, {"factor": 0.5}, {"jitter": 2}]
)
def test_backoff_rejects_bad_parameters(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        Backoff(**kwargs)
