"""``status`` and the admin commands pointed at something that is not a node's page."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lazily_queue.cli import main
from lazily_queue.cli.admin_client import node_url
from tests.canned_server import canned_server

#: What a node's Raft or client port sends first: not an HTTP status line.
NOT_HTTP = b"\xa3kprotocol_idjlazily-ipc\x00\x01garbage\r\n\r\n"
#: A web server that is not a node: 200 with a page that is not JSON.
HTML = (b"HTTP/1.0 200 OK\r\nContent-Type: text/html\r\nContent-Length: 13\r\n\r\n"
        b"<html></html>")


def serve(answer: bytes) -> Iterator[str]:
    with canned_server(answer) as port:
        yield f"http://127.0.0.1:{port}"


@pytest.fixture
def raft_port() -> Iterator[str]:
    yield from serve(NOT_HTTP)


@pytest.fixture
def web_page() -> Iterator[str]:
    yield from serve(HTML)


@pytest.mark.parametrize("command", [
    ("status",),
    ("status", "--require-leader"),
    ("queue", "list"),
    ("members", "list"),
    ("dlq", "list", "jobs"),
])
def test_a_port_that_does_not_speak_http_is_one_line(
    raft_port: str, command: tuple[str, ...], capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LAZILY_ADMIN_TOKEN", "a-token-of-sixteen-chars")
    assert main([*command, "--url", raft_port, "--timeout", "5"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: "), err
    assert raft_port in err and "`http`" in err and "`listen`" in err, err


@pytest.mark.parametrize("command", [("status",), ("queue", "list")])
def test_a_page_that_is_not_a_node_is_one_line(
    web_page: str, command: tuple[str, ...], capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LAZILY_ADMIN_TOKEN", "a-token-of-sixteen-chars")
    assert main([*command, "--url", web_page, "--timeout", "5"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: "), err
    assert web_page in err, err


@pytest.mark.parametrize("command", [("status",), ("status", "--kind", "queues"),
                                     ("queue", "list")])
def test_a_node_asked_through_a_proxy_says_which_one(
    command: tuple[str, ...], capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # urllib takes http_proxy even for 127.0.0.1: a node running there looks down.
    monkeypatch.setenv("LAZILY_ADMIN_TOKEN", "a-token-of-sixteen-chars")
    for variable in ("http_proxy", "HTTP_PROXY", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:1")
    assert main([*command, "--url", "http://127.0.0.1:2", "--timeout", "5"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: "), err
    assert ("(asked through the proxy http://127.0.0.1:1 that http_proxy names: add "
            "127.0.0.1 to no_proxy to reach the node directly)") in err, err
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    assert main([*command, "--url", "http://127.0.0.1:2", "--timeout", "5"]) == 1
    assert "proxy" not in capsys.readouterr().err


@pytest.mark.parametrize("command", [("status",), ("queue", "list"), ("members", "list")])
@pytest.mark.parametrize("timeout", ["0", "-1", "nan", "inf", "soon"])
def test_a_timeout_that_is_not_seconds_is_a_usage_error(
    command: tuple[str, ...], timeout: str, capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main([*command, "--url", "http://127.0.0.1:1", f"--timeout={timeout}"])
    assert exit_.value.code == 2
    assert f"argument --timeout: {timeout!r} is not a number of seconds above 0" in \
        capsys.readouterr().err


@pytest.mark.parametrize("command", [("status",), ("queue", "list")])
@pytest.mark.parametrize("url", ["http://[x", "127.0.0.1:notaport", "ftp://127.0.0.1:8101",
                                 "http://:8101"])
def test_a_malformed_url_is_a_usage_error(
    command: tuple[str, ...], url: str, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LAZILY_ADMIN_TOKEN", "a-token-of-sixteen-chars")
    assert main([*command, "--url", url]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --url ") and err.count("\n") == 1, err
    assert "give the node's `http` address" in err, err


@pytest.mark.parametrize(("address", "cause"), [
    ("carrier-pigeon://loft", "unsupported scheme 'carrier-pigeon'"),
    ("10.0.0.4:7001", "has no scheme"),
    ("tcp://10.0.0.4", "expected tcp://HOST:PORT"),
    ("ws://10.0.0.4:7001/raft?x=1", "expected ws://HOST:PORT/PATH"),
    ("wss://10.0.0.4:99999/raft", "Port out of range"),
    ("ws://10.0.0.4:7001/a b", "no spaces or control characters"),
    ("webrtc+ws://10.0.0.4:8765/orders?peer=5", "it must end in ?peer=4, not 5"),
    ("webrtc+ws://10.0.0.4:8765/orders?peer=4&x=1", "unexpected or repeated parameter 'x'"),
    ("unix:", "has an empty socket path"),
    ("unix://", "use unix:///absolute/path or unix:relative/path"),
    ("unix:///run/lq/", "it names a directory, not a socket"),
    ("unix:///" + "x" * 200, "the limit is 107"),
])
def test_members_add_refuses_an_address_no_member_could_have(
    address: str, cause: str, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Nothing listens at the URL: the address is refused before any request is made.
    monkeypatch.setenv("LAZILY_ADMIN_TOKEN", "a-token-of-sixteen-chars")
    assert main(["members", "add", "4", address, "--url", "http://127.0.0.1:1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: address {address!r}: ") and cause in err, err
    assert "nothing was changed" in err and err.count("\n") == 1, err


@pytest.mark.parametrize("command", [("status",), ("queue", "list")])
def test_config_with_http_port_0_says_to_pass_the_url(
    tmp_path: Path, command: tuple[str, ...], capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LAZILY_ADMIN_TOKEN", "a-token-of-sixteen-chars")
    config = tmp_path / "n1.toml"
    config.write_text('id = 1\ndata_dir = "d"\nlisten = "tcp://127.0.0.1:7001"\n'
                      'secret_env = "S"\nhttp = "127.0.0.1:0"\n')
    assert main([*command, "--config", str(config)]) == 2
    assert capsys.readouterr().err == (
        f"error: {config}: `http` port 0 is chosen when the node starts; pass --url with the "
        "address its `ready` line printed (http=...)\n")


@pytest.mark.parametrize(("args", "says"), [
    (("dlq", "list", "w", "--limit=-5"), "argument --limit: '-5' is not a page size"),
    (("dlq", "list", "w", "--limit=0"), "argument --limit: '0' is not a page size"),
    (("dlq", "list", "w", "--limit=1001"), "argument --limit: '1001' is not a page size"),
    (("dlq", "list", "w", "--offset=-2"), "argument --offset: '-2' is not a position"),
    (("status", "--kind", "queues", "--offset=-1"), "argument --offset: '-1' is not a position"),
])
def test_a_page_out_of_range_is_a_usage_error(
    args: tuple[str, ...], says: str, capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main([*args, "--url", "http://127.0.0.1:1"])
    assert exit_.value.code == 2
    assert says in capsys.readouterr().err


@pytest.mark.parametrize("paging", [("--offset", "5"), ("--prefix", "jobs.")])
def test_paging_the_status_without_a_kind_says_to_add_one(
    paging: tuple[str, str], capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["status", "--url", "http://127.0.0.1:1", *paging]) == 2
    assert capsys.readouterr().err == ("error: --offset and --prefix page a listing of objects: "
                                       "add --kind queues, topics or work_queues\n")


@pytest.mark.parametrize(("given", "used"), [
    ("http://127.0.0.1:8101/status.json", "http://127.0.0.1:8101"),
    ("127.0.0.1:8101/status.json/", "http://127.0.0.1:8101"),
    ("https://lq.example/cluster/status.json", "https://lq.example/cluster"),
    ("http://127.0.0.1:8101/cluster/", "http://127.0.0.1:8101/cluster/"),
])
def test_the_status_documents_address_is_the_nodes(given: str, used: str) -> None:
    """Pasted from the browser, the status document's address names its node."""
    assert node_url(given) == used


@pytest.mark.parametrize("url", ["http://127.0.0.1:8101?x=1", "http://127.0.0.1:8101#top",
                                 "http://127.0.0.1:8101/?"])
@pytest.mark.parametrize("command", [("status",), ("members", "list")])
def test_an_address_with_a_query_or_fragment_is_refused_in_one_line(
    url: str, command: tuple[str, ...], capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LAZILY_ADMIN_TOKEN", "a-token-of-sixteen-chars")
    assert main([*command, "--url", url]) == 2
    err = capsys.readouterr().err
    assert err == (f"error: --url {url!r}: a node's address has no query (?) or fragment "
                   "(#); give the node's `http` address, e.g. http://127.0.0.1:8101\n")


@pytest.mark.parametrize("command", [("status",), ("status", "--kind", "queues"),
                                     ("queue", "list")])
def test_an_https_address_of_a_plain_http_node_says_to_give_http(
    web_page: str, command: tuple[str, ...], capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LAZILY_ADMIN_TOKEN", "a-token-of-sixteen-chars")
    https = web_page.replace("http://", "https://")
    assert main([*command, "--url", https, "--timeout", "5"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: "), err
    assert f"(it answers plain HTTP, not TLS: give {web_page})" in err, err


@pytest.mark.parametrize(("command", "what"), [
    (("queue", "purge", ""), "name"),
    (("queue", "delete", "", "--kind", "queue"), "name"),
    (("queue", "delete-subscriber", "", "alice"), "topic name"),
    (("dlq", "list", ""), "work queue name"),
    (("dlq", "redrive", ""), "work queue name"),
])
def test_an_empty_name_is_a_usage_error_before_any_request(
    command: tuple[str, ...], what: str, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Nothing listens at the URL: the name is refused before any request is made.
    monkeypatch.setenv("LAZILY_ADMIN_TOKEN", "a-token-of-sixteen-chars")
    assert main([*command, "--url", "http://127.0.0.1:1"]) == 2
    assert capsys.readouterr().err == f"error: {what} must be a non-empty string, not ''\n"


def test_ctrl_c_while_a_change_is_asked_says_it_may_be_done(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ctrl-C after the request went out: the change may be made all the same."""
    import urllib.request

    def interrupted(*_: object, **__: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setenv("LAZILY_ADMIN_TOKEN", "a-token-of-sixteen-chars")
    monkeypatch.setattr(urllib.request, "urlopen", interrupted)
    assert main(["members", "remove", "3", "--url", "http://127.0.0.1:1"]) == 130
    assert capsys.readouterr().err == (
        "error: interrupted by Ctrl-C while waiting for http://127.0.0.1:1's answer: what was "
        "asked may still be done: check (`lazily-queue status`, `members list`) before asking "
        "again\n")
    assert main(["members", "list", "--url", "http://127.0.0.1:1"]) == 130  # nothing changes
    assert capsys.readouterr().err == "interrupted: lazily-queue members stopped by Ctrl-C\n"
