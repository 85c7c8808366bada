"""``lazily-queue signaling --listen``: HOST:PORT, an IPv6 host in brackets."""

from __future__ import annotations

import argparse
import socket

import pytest

from lazily_queue.cli.signaling import listen_address, run


@pytest.mark.parametrize(("text", "expected"), [
    ("127.0.0.1:8765", ("127.0.0.1", 8765)), ("[::1]:8766", ("::1", 8766)),
    ("example.org:0", ("example.org", 0)),
])
def test_a_listen_address_is_host_and_port(text: str, expected: tuple[str, int]) -> None:
    assert listen_address(text) == expected


@pytest.mark.parametrize("text", [
    "[::1:8766", "::1]:8766", "[]:8766", "host", "host:", ":8765", "host:65536", "host:x",
])
def test_a_malformed_listen_address_is_refused_naming_it(text: str) -> None:
    with pytest.raises(ValueError, match="--listen must be HOST:PORT"):
        listen_address(text)


def test_a_port_in_use_is_named_with_the_fix(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        args = argparse.Namespace(listen=f"127.0.0.1:{port}", no_token=True, token_env=None,
                                  token_file=None, tls_cert=None, tls_key=None)
        assert run(args) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: cannot serve on 127.0.0.1:{port}: ") and err.count("\n") == 1
    assert "another process listens there: stop it or choose another port" in err


def test_the_help_reads_as_plain_text(capsys: pytest.CaptureFixture[str]) -> None:
    from lazily_queue.cli import main

    with pytest.raises(SystemExit):
        main(["signaling", "--help"])
    out = capsys.readouterr().out
    assert "lazily-queue signaling --listen HOST:PORT: the signaling server" in out
    assert "``" not in out
