"""Any configuration file, however wrong, gives a ``ConfigError`` naming the file (or, for
credentials read later, an ``InvalidConfiguration``): never another exception."""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lazily_queue import InvalidConfiguration
from lazily_queue.config import ConfigError, parse_config

SECRET = "a-cluster-secret-of-enough-length-123456"
#: A configuration using most keys and tables; every example changes a few of its values.
FULL: dict[str, Any] = {
    "id": 1, "cluster": "orders", "data_dir": "data", "listen": "tcp://127.0.0.1:7001",
    "secret_env": "S", "http": "127.0.0.1:8101", "durability": "fsync", "max_objects": 100,
    "max_subscribers": 10, "max_message_bytes": 100_000, "startup_timeout": 5,
    "admin_token_env": "ADMIN", "http_advertise": "http://127.0.0.1:8101",
    "clients": "unix:c1.sock",
    "peers": {"1": "tcp://127.0.0.1:7001", "2": "tcp://127.0.0.1:7002",
              "3": "ws://127.0.0.1:7003/r"},
    "app": {"entry": "myapp:main", "workers": 2},
    "dedup": {"max_entries": 100, "max_age": 60},
    "client": [{"name": "web", "token_env": "WEB_TOKEN", "produce": ["jobs", "orders.*"],
                "consume": ["jobs"]},
               {"name": "ops", "token_file": "ops.token", "admin": ["*"]}],
    "webrtc": {"ice_servers": [{"urls": ["stun:stun.example:3478"]}]},
}
ODD = [0, -1, 2**64, -(10**4000), 10**400, 1.5, math.nan, math.inf, -math.inf, True, "",
       "x" * 5000, "unix:", "tcp://", "tcp://[::1]:99999", "ws://h:1/", "tls://a:1",
       "webrtc+ws://h:1/r?peer=", "\x00", "a\x00b", "é", "/", "myapp:", ":main",
       "127.0.0.1:0", "http://[::1]:80", "*", "/dev/zero", "stun:x"]
#: Keys an example may add to a table: known ones at the wrong place as well as unknown.
KEYS = ["secret_file", "admin_token_file", "token_file", "clients_ca", "tls", "certificate",
        "key", "ca", "signaling_token_file", "urls", "username", "credential_env", "entry",
        "extra", "1", "99", "-1", "\x00"]
values = st.recursive(st.sampled_from(ODD), lambda inner: st.lists(inner, max_size=3) | (
    st.dictionaries(st.sampled_from(["urls", "name", "entry", "x", "1", "2", "\x00"]), inner,
                    max_size=3)), max_leaves=6)


def _places(doc: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [at] if at else []
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) \
        if isinstance(doc, list) else ()
    for key, value in items:
        found += _places(value, (*at, key))
    return found


@st.composite
def configurations(draw: st.DrawFn) -> dict[str, Any]:
    doc = copy.deepcopy(FULL)
    for _ in range(draw(st.integers(1, 3))):
        place = draw(st.sampled_from(_places(doc)))
        parent = doc
        for key in place[:-1]:
            parent = parent[key]
        action = draw(st.sampled_from(["set", "drop", "add"]))
        if action == "set" or not isinstance(parent, dict):
            parent[place[-1]] = draw(values)
        elif action == "drop":
            del parent[place[-1]]
        else:
            parent[draw(st.sampled_from(KEYS))] = draw(values)
    return doc


@given(doc=configurations())
@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_only_configuration_errors(doc: dict[str, Any], tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    _check(doc, tmp_path, monkeypatch)


def _check(doc: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("S", SECRET)
    monkeypatch.setenv("WEB_TOKEN", "web-token-from-the-env")
    monkeypatch.setenv("ADMIN", "an-admin-token-of-enough-length-0123")
    (tmp_path / "ops.token").write_text("ops-token-from-a-file\n")
    try:
        config = parse_config(doc, base=tmp_path, source="fuzz.toml")
    except ConfigError as exc:
        text = str(exc)
        assert text.startswith("fuzz.toml: ") and len(text) < 1000, f"{text[:300]}..."
        return
    for read in (config.secret, config.admin_token, config.client_access):
        try:
            read()
        except InvalidConfiguration as exc:
            text = str(exc)
            assert len(text) < 1000, f"{text[:300]}..."


def _tables(doc: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [at] if isinstance(doc, dict) else []
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) \
        if isinstance(doc, list) else ()
    for key, value in items:
        found += _tables(value, (*at, key))
    return found


def _changed(at: tuple[Any, ...], key: Any, value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(FULL)
    parent = doc
    for step in at:
        parent = parent[step]
    parent[key] = value
    return doc


def test_every_odd_value_in_every_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                        ) -> None:
    """Each odd value in place of each value of the full file, and under each key an
    example may add to each of its tables."""
    changes = [(place[:-1], place[-1], value) for place in _places(FULL) for value in ODD]
    changes += [(table, key, value) for table in _tables(FULL) for key in KEYS
                for value in ODD]
    for at, key, value in changes:
        _check(_changed(at, key, value), tmp_path, monkeypatch)
