"""Node configuration files: every mistake fails fast with the key and the fix."""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path

import pytest

from lazily_queue import DedupLimits, InvalidConfiguration
from lazily_queue.cli import main
from lazily_queue.config import ConfigError, load_config, parse_config
from lazily_queue.service import NodeService

BASE = {"id": 1, "data_dir": "data", "listen": "tcp://127.0.0.1:7001", "secret_env": "S",
        "peers": {"2": "tcp://127.0.0.1:7002", "3": "tcp://127.0.0.1:7003"}}


def parse(tmp_path: Path, **changes: object) -> object:
    doc = {**BASE, **changes}
    for key, value in list(doc.items()):
        if value is None:
            del doc[key]
    return parse_config(doc, base=tmp_path, source="node.toml")


def test_a_full_file_round_trips(tmp_path: Path) -> None:
    (tmp_path / "node.toml").write_text(
        'id = 2\ncluster = "orders"\ndata_dir = "d/2"\nlisten = "unix:n2.sock"\n'
        'http = "127.0.0.1:8102"\ndurability = "none"\nsecret_file = "secret"\n'
        'startup_timeout = 5\nmax_message_bytes = 2097152\n'
        '[peers]\n1 = "unix:n1.sock"\n2 = "unix:n2.sock"\n'
        '[app]\nentry = "pkg.mod:main"\nworkers = 3\n'
        '[dedup]\nmax_entries = 500\nmax_age = 30\n')
    (tmp_path / "secret").write_text("  xyz\n")
    config = load_config(tmp_path / "node.toml")
    assert config.node_id == 2 and config.cluster == "orders"
    assert config.data_dir == tmp_path / "d" / "2"
    assert config.peers == {1: "unix:n1.sock"}  # its own entry is the listen address
    assert config.http == ("127.0.0.1", 8102) and config.http_url == "http://127.0.0.1:8102"
    assert config.secret() == b"xyz"
    assert config.startup_timeout == 5.0
    assert config.max_message_bytes == 2 * 1024 * 1024
    assert config.node(secret=b"x").max_message_bytes == 2 * 1024 * 1024
    assert config.app_dir == tmp_path.resolve()
    assert config.app_entry == "pkg.mod:main" and config.app_options == {"workers": 3}
    assert config.node(secret=b"x").dedup == DedupLimits(max_entries=500, max_age=30)
    assert parse(tmp_path).dedup is None  # type: ignore[attr-defined]
    assert config.metrics_named_objects == 1000  # the default
    assert parse(tmp_path, metrics={"named_objects": 0}).metrics_named_objects == 0  # type: ignore[attr-defined]
    assert config.node(secret=b"x", dedup=None).dedup == DedupLimits()  # the default


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"id": None}, r"`id` is required"),
        ({"id": "one"}, r"`id` must be an integer node id"),
        ({"id": -1}, r"`id` must be an integer node id"),
        ({"colour": "red"}, r"unknown key\(s\) colour; the known keys are admin_"),
        ({"data_dirr": "d", "peer": {}, "\x1b[31m": 1},
         r"unknown key\(s\) '\\x1b\[31m', data_dirr \(did you mean data_dir\?\), peer "
         r"\(did you mean peers\?\); the known keys are"),
        ({"durability": "sometimes"}, r"`durability` must be \"fsync\" or \"none\""),
        ({"listen": None}, r"`listen` is required"),
        ({"peers": {"2": "tcp://127.0.0.1:7002", "02": "tcp://127.0.0.1:7004"}},
         r"lists node 2 twice"),
        ({"peers": {"x": "tcp://127.0.0.1:7002"}}, r"\[peers\] key 'x' must be an integer"),
        ({"peers": {"1": "tcp://127.0.0.1:9999"}}, r"two nodes with id 1"),
        ({"peers": {"2": "tcp://127.0.0.1:7001"}},
         r"peer 2 has this node's own listen address 'tcp://127.0.0.1:7001'; if this node "
         r"is 2, set `id = 2`, else give it its own `listen` address"),
        ({"peers": {"2": "tcp://127.0.0.1:7002", "3": "tcp://127.0.0.1:7002"}},
         r"peers 2 and 3 share the address"),
        ({"peers": {"2": "carrier-pigeon://loft"}}, r"unsupported scheme 'carrier-pigeon'"),
        ({"peers": {"2": "tcp://127.0.0.1"}}, r"expected tcp://HOST:PORT"),
        ({"peers": {"2": "unix:///no/such/dir/n2.sock"}}, r"directory /no/such/dir does not"),
        ({"peers": {"2": "ws://127.0.0.1:7002/raft?x=1"}}, r"expected ws://HOST:PORT/PATH"),
        ({"peers": {"2": "ws://127.0.0.1:99999/raft"}}, r"Port out of range"),
        ({"peers": {"2": "ws://:7002/raft"}}, r"has no host"),
        ({"listen": "ws://127.0.0.1:7001/a b"}, r"no spaces or control characters"),
        ({"listen": "webrtc+ws://127.0.0.1:8765/o?peer=2"}, r"must end in \?peer=1, not 2"),
        ({"peers": {"2": "webrtc+ws://127.0.0.1:8765/o"}}, r"must end in \?peer=2, not no"),
        ({"peers": {"2": "webrtc+ws://127.0.0.1:8765/o?peer=2&x=1"}}, r"repeated parameter"),
        ({"listen": "unix:///no/such/dir/n1.sock"}, r"`listen` address .* does not exist"),
        ({"secret_env": None}, r"exactly one of `secret_env`"),
        ({"secret_file": "s"}, r"exactly one of `secret_env`"),
        ({"http": "localhost"}, r"`http` must be \"HOST:PORT\""),
        ({"startup_timeout": -1}, r"`startup_timeout` must be a number"),
        ({"startup_timeout": float("nan")}, r"`startup_timeout` must be a number .*, not nan"),
        ({"startup_timeout": 10 ** 400}, r"`startup_timeout` must be a number of seconds from "
                                         r"0 to 1e\+09 .*, not an int of 1329 bits"),
        ({"data_dir": "d\x00"}, r"`data_dir` holds a NUL character \(\\u0000\); no name"),
        ({"app": {"entry": "my\x00app:main"}}, r"`app.entry` holds a NUL character"),
        ({"peers": {"2": "unix:/tmp/a\x00.sock"}}, r"`peers.2` holds a NUL character"),
        ({"client": [{"name": "w", "token_file": "t"}, {"name": "o", "token_file": "t\x00"}]},
         r"`client\[2\].token_file` holds a NUL character"),
        ({"max_message_bytes": 1.5}, r"`max_message_bytes` must be an int from 1024 to "
                                     r"4194304 \(bytes; the same on every node\), not 1.5"),
        ({"max_message_bytes": 16 * 1024 * 1024}, r"`max_message_bytes` must be an int"),
        ({"clients": [], "client": [{"name": "web", "token_env": "W"}]},
         r"`clients` is an address or a non-empty list of addresses; leave it out"),
        ({"dedup": 5}, r"`dedup` must be a table"),
        ({"dedup": {"size": 5}}, r"\[dedup\]: unknown key"),
        ({"dedup": {"max_entry": 5}},
         r"\[dedup\]: unknown key\(s\) max_entry \(did you mean max_entries\?\)"),
        ({"dedup": {"max_entries": 0}}, r"\[dedup\]: dedup max_entries must be an int"),
        ({"dedup": {"max_age": "1h"}}, r"\[dedup\]: dedup max_age must be seconds"),
        ({"metrics": 5}, r"`metrics` must be a table"),
        ({"metrics": {"named": 5}}, r"\[metrics\]: unknown key"),
        ({"metrics": {"named_objects": -1}}, r"\[metrics\]: named_objects must be an int >= 0"),
        ({"app": {"entry": "nocolon"}}, r"\[app\] entry must look like"),
        ({"app": {"entyr": "myapp:main", "workers": 2}},
         r"\[app\] needs `entry = .*` \(it has 'entyr': a misspelt entry\?\)"),
        ({"admin_token_env": "A", "admin_token_file": "a"}, r"at most one of `admin_token"),
        ({"admin_token_env": 3}, r"`admin_token_env` must be a non-empty string"),
        ({"http_advertise": "q1:8101"}, r"`http_advertise` must be an http:// or https://"),
        ({"listen": "tls://127.0.0.1:7001"}, r"`listen` address .* uses TLS: add a \[tls\]"),
        ({"tls": {"certificate": "c.pem"}}, r"\[tls\] `key` is required"),
        ({"tls": {"certificate": "c", "key": "k", "colour": 1}}, r"\[tls\]: unknown key"),
        ({"tls": {"certificate": "c", "key": "k", "check_hostname": "yes"}},
         r"`check_hostname` must be true or false"),
        ({"tls": {"certificate": "c.pem", "key": "k.pem"}},
         r"\[tls\]: TLS certificate file .*c.pem does not exist"),
        ({"webrtc": {"ice_servers": [{"urls": ["turn:turn.example:3478"]}]}},
         r"a TURN server needs `username` and `credential_env`"),
        ({"webrtc": {"ice_servers": [{"urls": ["http://x"]}]}}, r"`urls` must list stun:"),
        ({"webrtc": {"signaling_token": "inline"}}, r"\[webrtc\]: unknown key"),
    ],
)
def test_mistakes_name_the_key_and_the_fix(
    tmp_path: Path, changes: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        parse(tmp_path, **changes)
    assert str(info.value).startswith("node.toml: ")


@pytest.mark.parametrize("changes", [{"id": "\u00b2"},
                                     {"peers": {"\u00b2": "tcp://127.0.0.1:7002"}}])
def test_an_id_of_digits_int_cannot_read_is_refused(
    tmp_path: Path, changes: dict[str, object]
) -> None:
    """``"²".isdigit()`` holds but ``int("²")`` raises: one ConfigError, not a ValueError."""
    with pytest.raises(ConfigError, match=r"must be an integer node id"):
        parse(tmp_path, **changes)


def test_the_admin_token(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("S", "the-cluster-secret-value")
    assert parse(tmp_path).admin_token() is None  # the admin API is off
    config = parse(tmp_path, admin_token_env="A")
    monkeypatch.setenv("A", "short")
    with pytest.raises(ConfigError, match=r"from environment variable A .* shorter than 16"):
        config.admin_token()
    monkeypatch.setenv("A", "the-cluster-secret-value")
    with pytest.raises(ConfigError, match=r"must differ from the cluster secret"):
        config.admin_token()
    assert config.admin_token(check_secret=False) == "the-cluster-secret-value"
    (tmp_path / "admin").write_text("an-admin-token-of-some-length\n")
    assert parse(tmp_path, admin_token_file="admin").admin_token() == (
        "an-admin-token-of-some-length")
    with pytest.raises(ConfigError, match=r"cannot read the admin token"):
        parse(tmp_path, admin_token_file="missing").admin_token()


@pytest.mark.parametrize("data_dir", ["afile", "afile/1"])
def test_a_data_dir_that_is_a_file(tmp_path: Path, data_dir: str) -> None:
    (tmp_path / "afile").write_text("")
    with pytest.raises(ConfigError, match=r"`data_dir` .*: .*afile is not a directory"):
        parse(tmp_path, data_dir=data_dir)


def test_a_data_dir_name_too_long_for_the_file_system(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"`data_dir` '.*\.\.\..*' cannot be used: File name "
                                          r"too long"):
        parse(tmp_path, data_dir="d" * 5000)


@pytest.mark.parametrize("changes", [
    {"id": "x" * 5000}, {"durability": "x" * 5000}, {"listen": "x" * 5000},
    {"peers": {"2": "tcp://" + "h" * 5000 + ":1"}}, {"dedup": {"max_age": "x" * 5000}},
    {"client": [{"name": "x" * 5000, "token_env": "W"}]}, {"http_advertise": "x" * 5000},
    {"durability": ["x"] * 2000}, {"peers": {"2": ["x"] * 2000}},
])
def test_a_huge_value_is_named_by_its_first_characters(
        tmp_path: Path, changes: dict[str, object]) -> None:
    with pytest.raises(ConfigError) as info:
        parse(tmp_path, **changes)
    assert "..." in str(info.value) and len(str(info.value)) < 400, str(info.value)[:400]


@pytest.mark.parametrize(("http", "url"), [("127.0.0.1:8101", "http://127.0.0.1:8101"),
                                          ("[::1]:8101", "http://[::1]:8101"),
                                          ("localhost:8101", "http://localhost:8101")])
def test_the_http_url_of_an_address(tmp_path: Path, http: str, url: str) -> None:
    # `status --config` and the admin commands reach the node at this URL.
    assert parse(tmp_path, http=http).http_url == url  # type: ignore[attr-defined]


def test_missing_secret_env_var(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("S", raising=False)
    config = parse_config(BASE, base=tmp_path, source="node.toml")
    with pytest.raises(ConfigError, match=r"environment variable S .* is not set"):
        config.secret()


def test_missing_secret_file(tmp_path: Path) -> None:
    doc = {k: v for k, v in BASE.items() if k != "secret_env"} | {"secret_file": "nope"}
    config = parse_config(doc, base=tmp_path, source="node.toml")
    with pytest.raises(ConfigError, match=r"cannot read the cluster secret from `secret_file`"):
        config.secret()


def test_a_secret_or_token_file_is_read_up_to_a_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    big = tmp_path / "big"
    big.write_bytes(b"s" * (64 * 1024 + 1))
    fix = r": it holds more than 64 KiB; a secret or token file holds the secret alone"
    for path in (str(big), "/dev/zero"):
        doc = {k: v for k, v in BASE.items() if k != "secret_env"} | {"secret_file": path}
        with pytest.raises(ConfigError, match=r"cannot read the cluster secret .*" + fix):
            parse_config(doc, base=tmp_path, source="node.toml").secret()
        config = parse(tmp_path, admin_token_file=path)
        with pytest.raises(ConfigError, match=r"cannot read the admin token .*" + fix):
            config.admin_token()  # type: ignore[attr-defined]
        config = parse(tmp_path, clients="unix:c.sock",
                       client=[{"name": "web", "token_file": path, "produce": ["*"]}])
        with pytest.raises(InvalidConfiguration, match=r"cannot read the token file .*" + fix):
            config.client_access()  # type: ignore[attr-defined]
    os.mkfifo(tmp_path / "pipe")  # nobody writes to it: read as empty, not waited for
    doc = {k: v for k, v in BASE.items() if k != "secret_env"} | {"secret_file": "pipe"}
    with pytest.raises(ConfigError, match=r"`secret_file` .*pipe is empty"):
        parse_config(doc, base=tmp_path, source="node.toml").secret()
    (tmp_path / "fits").write_bytes(b"  " + b"s" * (64 * 1024 - 4) + b"\n\n")
    doc = {k: v for k, v in BASE.items() if k != "secret_env"} | {"secret_file": "fits"}
    assert parse_config(doc, base=tmp_path, source="node.toml").secret() == b"s" * 65532


def test_a_file_read_through_a_pipe_resolves_paths_from_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # as `--config <(...)`: the pipe's directory is /proc's
    read, write = os.pipe()
    os.write(write, b'id = 1\ndata_dir = "d"\nlisten = "unix:n1.sock"\nsecret_env = "S"\n')
    os.close(write)
    try:
        config = load_config(f"/dev/fd/{read}")
    finally:
        os.close(read)
    assert config.data_dir == tmp_path / "d" and config.app_dir == tmp_path


def test_unreadable_or_invalid_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"does not exist"):
        load_config(tmp_path / "missing.toml")
    (tmp_path / "bad.toml").write_text("id = = 1\n")
    with pytest.raises(ConfigError, match=r"is not valid TOML"):
        load_config(tmp_path / "bad.toml")
    # A file saved as UTF-16 (as some editors do) is named, not a traceback.
    (tmp_path / "utf16.toml").write_text('id = 1\ndata_dir = "d"\n', encoding="utf-16")
    with pytest.raises(ConfigError, match=r"utf16.toml is not UTF-8 text \(invalid start "
                                          r"byte at byte 0\); save it as UTF-8"):
        load_config(tmp_path / "utf16.toml")
    with pytest.raises(ConfigError, match=r"/dev/zero holds more than 1 MiB; a node "
                                          r"configuration is a few lines of TOML"):
        load_config("/dev/zero")  # an endless file is read no further than the bound
    os.mkfifo(tmp_path / "pipe")  # a named pipe nobody writes to reads as empty
    with pytest.raises(ConfigError, match=r"pipe: `id` is required"):
        load_config(tmp_path / "pipe")
    (tmp_path / "deep.toml").write_text('id = 1\ndata_dir = "d"\nx = ' + "[" * 5000 + "]" * 5000)
    with pytest.raises(ConfigError, match=r"deep.toml: its arrays or tables are nested too "
                                          r"deeply to read"):
        load_config(tmp_path / "deep.toml")


def test_cli_exits_2_with_the_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LAZILY_NOT_SET", raising=False)
    config = tmp_path / "node.toml"
    config.write_text('id = 1\ndata_dir = "d"\nlisten = "unix:n1.sock"\n'
                      'secret_env = "LAZILY_NOT_SET"\n')
    assert main(["node", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert "error:" in err and "LAZILY_NOT_SET" in err and "export it" in err
    assert not (tmp_path / "d").exists()  # nothing was created before the check


def test_a_webrtc_address_needs_the_webrtc_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lazily_transports import SchemeTable

    import lazily_queue.config_keys

    peers = {"2": "webrtc+ws://127.0.0.1:8765/room?peer=2"}
    monkeypatch.setattr(lazily_queue.config_keys, "DEFAULT_SCHEMES", SchemeTable.builtin())
    assert parse(tmp_path, peers=peers)  # the extra is installed here
    monkeypatch.setattr(lazily_queue.config_keys, "DEFAULT_SCHEMES", SchemeTable.builtin())
    monkeypatch.setitem(sys.modules, "aiortc", None)  # as without it
    fix = r"peer 2 address .* pip install -e '\.\[webrtc\]' in the lazily-queue clone"
    with pytest.raises(ConfigError, match=fix):
        parse(tmp_path, peers=peers)


def test_a_tls_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.certs import TestCA

    ca = TestCA(tmp_path / "certs")
    ca.issue("n1")
    monkeypatch.setenv("S", "secret")
    config = parse(tmp_path, listen="tls://127.0.0.1:7001",
                   peers={"2": "tls://127.0.0.1:7002", "3": "wss://127.0.0.1:7003/r"},
                   tls={"certificate": "certs/n1.pem", "key": "certs/n1.key",
                        "ca": "certs/ca.pem", "check_hostname": False})
    assert config.tls is not None and config.tls.ca == tmp_path / "certs" / "ca.pem"
    assert config.tls.check_hostname is False
    node = config.node(durability="none")
    assert node.listen == "tls://127.0.0.1:7001"
    with pytest.raises(ConfigError, match=r"peer 2 address 'tcp://127.0.0.1:7002' does not use"):
        parse(tmp_path, listen="tls://127.0.0.1:7001",
              tls={"certificate": "certs/n1.pem", "key": "certs/n1.key"})


def test_a_webrtc_table_reaches_the_node(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("aiortc")
    monkeypatch.setenv("S", "secret")
    monkeypatch.setenv("SIG", "signaling-token")
    monkeypatch.setenv("TURN_PW", "turn-password")
    address = "webrtc+ws://127.0.0.1:8765/room?peer="
    config = parse(tmp_path, listen=address + "1",
                   peers={"2": address + "2", "3": address + "3"},
                   webrtc={"signaling_token_env": "SIG", "ice_servers": [
                       {"urls": "stun:stun.example.org:3478"},
                       {"urls": ["turn:turn.example.org:3478"], "username": "edge",
                        "credential_env": "TURN_PW"}]})
    node = config.node(durability="none")
    transport = node._links.schemes.transport("webrtc+ws")  # type: ignore[union-attr]
    assert transport._signaling_token == "signaling-token"  # type: ignore[attr-defined]
    servers = transport.ice.ice_servers  # type: ignore[attr-defined]
    assert [(s.urls, s.username, s.credential) for s in servers] == [
        (["stun:stun.example.org:3478"], None, None),
        (["turn:turn.example.org:3478"], "edge", "turn-password")]
    monkeypatch.delenv("TURN_PW")
    with pytest.raises(ConfigError, match=r"ice_servers\[1\] credential: environment "
                                          r"variable TURN_PW is not set"):
        config.node(durability="none")


class _RefusedListen:
    """A node whose listen address the system refuses to this user."""

    async def start(self) -> None:
        raise PermissionError(errno.EACCES, "Permission denied")

    async def stop(self) -> None:
        return None


async def test_a_listen_address_this_user_may_not_bind_names_the_fix(tmp_path: Path) -> None:
    """Not the webrtc signaling advice for a socket or a port the user may not bind."""
    config = tmp_path / "node.toml"
    config.write_text(f'id = 1\ndata_dir = "d"\nlisten = "unix:{tmp_path}/n1.sock"\n'
                      'secret_env = "S"\n')
    service = NodeService(load_config(config), handle_signals=False)
    with pytest.raises(ConfigError) as caught:
        await service._start_node(_RefusedListen())  # type: ignore[arg-type]
    message = str(caught.value)
    assert "Permission denied" in message and "webrtc" not in message, message
    assert "socket" in message and "port below 1024" in message, message


def test_a_tls_link_closed_by_its_peer_at_start_points_at_the_certificate() -> None:
    """Peers that refuse this node's certificate close the TLS handshake, which tells
    this node nothing: its start-up report says what that usually means."""
    from types import SimpleNamespace

    from lazily_queue.link_trouble import LinkTrouble
    from lazily_queue.service import NodeService

    closed = "handshake failed on 'handshake': link closed during handshake (closed by peer)"
    watch = LinkTrouble()
    watch.last = {1: closed, 2: closed}
    node = SimpleNamespace(driver=SimpleNamespace(
        replica=SimpleNamespace(engine=SimpleNamespace(connected=set())),
        network=SimpleNamespace()))
    service = SimpleNamespace(config=SimpleNamespace(
        peers={1: "tls://127.0.0.1:7401", 2: "tcp://127.0.0.1:7402"}))
    report = NodeService._peer_report(service, node, watch)  # type: ignore[arg-type]
    tls, tcp = report.split("peer 1 (")[1].split("; peer 2 (")
    assert "refuses this node's TLS certificate" in tls and "clientAuth" in tls
    assert tcp.endswith(closed)
