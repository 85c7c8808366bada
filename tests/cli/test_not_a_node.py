"""``lazily-queue status`` and the admin commands against an HTTP server that is not a
node of this version, and ``status`` with its output's reader gone: one line and a
status, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from lazily_queue.cli import main

#: What the server answers, by path (without the query; else by method, ``"POST"``);
#: :data:`CLOSE`: nothing, the connection closed (as a Raft ``listen`` address may do).
ANSWERS: dict[str, bytes] = {}
CLOSE = b"close"


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = ANSWERS.get(self.path.split("?")[0], ANSWERS.get(self.command))
        if body is CLOSE:
            self.close_connection = True
            return
        self.send_response(200 if body is not None else 404)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body or b"{}")

    do_POST = do_DELETE = do_GET

    def log_message(self, *_: Any) -> None:
        pass


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("LAZILY_ADMIN_TOKEN", "an admin token")
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        ANSWERS.clear()


#: A status document with the fields a node's has, and one it lacks.
UNREADABLE = {"node": "1", "cluster": "c", "state": "leader", "members": 5}


@pytest.mark.parametrize(("path", "document", "words", "said"), [
    ("/status.json", {"status": "ok"}, [], "is not a node's status page (it answered JSON "
     "without the fields node, cluster, state)"),
    ("/status.json", [1, 2], ["--require-leader"], "without the fields node, cluster"),
    ("/status.json", None, ["--json"], "without the fields node, cluster"),
    ("/status.json", UNREADABLE, [], "/status.json is not a status document of this version "
     "of lazily-queue (KeyError: 'leader'); --json prints it as it is"),
    ("/objects.json", [], ["--kind", "queues"], "without the fields kind, objects"),
    ("/objects.json", {"kind": "queues", "objects": {}}, ["--kind", "queues"],
     "is not a status document of this version of lazily-queue (KeyError: 'offset')"),
])
def test_a_document_no_node_answers_is_one_line_and_status_1(
        server: str, capsys: pytest.CaptureFixture[str], path: str, document: Any,
        words: list[str], said: str) -> None:
    ANSWERS[path] = json.dumps(document).encode()
    assert main(["status", "--url", server, *words]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("error: ") and err.count("\n") == 1 and said in err


@pytest.mark.parametrize("words", [["status"], ["members", "list"]])
def test_a_connection_closed_without_an_answer_names_the_listen_address(
        server: str, capsys: pytest.CaptureFixture[str], words: list[str]) -> None:
    ANSWERS["/status.json"] = ANSWERS["/admin/api/members"] = CLOSE
    assert main([*words, "--url", server]) == 1
    err = capsys.readouterr().err
    assert err == (f"error: {server} closed the connection without answering; give the "
                   "node's `http` address, not its `listen` address (or, if it is the `http` "
                   "one, the node may be stopping: ask again)\n")


def test_a_change_answered_by_a_closed_connection_may_still_be_done(
        server: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Not "ask again": the node may have made the change before it closed."""
    ANSWERS["POST"] = CLOSE
    assert main(["queue", "purge", "jobs", "--kind", "queue", "--url", server]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "closed the connection without answering" in err
    assert "what was asked may still be done: check" in err and "ask again)" not in err


def test_a_leaders_vitals_of_another_shape_do_not_stop_require_leader(
        server: str, capsys: pytest.CaptureFixture[str]) -> None:
    status: dict[str, Any] = {
        "node": "1", "cluster": "c", "state": "follower", "leader": "2", "term": 1,
        "has_quorum": True, "disk": {"writable": True},
        "members": [{"id": "2", "vitals_proof": "proven", "vitals": [1]}]}
    ANSWERS["/status.json"] = json.dumps(status).encode()
    assert main(["status", "--url", server, "--json", "--require-leader"]) == 0
    assert json.loads(capsys.readouterr().out)["leader"] == "2"


@pytest.mark.parametrize(("words", "said"), [
    (["members", "list"], "(KeyError: 'members')"),
    (["queue", "list"], "(KeyError: 'queues')"),
    (["dlq", "list", "jobs"], "(TypeError: list indices must be integers or slices, not str)"),
])
def test_an_admin_answer_of_another_shape_is_one_line_and_status_1(
        server: str, capsys: pytest.CaptureFixture[str], words: list[str], said: str) -> None:
    ANSWERS["/admin/api/members"] = ANSWERS["/admin/api/queues"] = b"{}"
    ANSWERS["/admin/api/dlq/jobs"] = b"[]"
    assert main([*words, "--url", server]) == 1
    err = capsys.readouterr().err
    assert err == (f"error: {server} answered what this version of lazily-queue does not read "
                   f"{said}; is it a node of this version, at its `http` address?\n")


def _status_into_a_closed_pipe(url: str, *words: str) -> subprocess.CompletedProcess[str]:
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run([sys.executable, "-m", "lazily_queue", "status", "--url", url,
                               *words], stdout=write, stderr=subprocess.PIPE, text=True,
                              timeout=60)
    finally:
        os.close(write)


def test_tables_to_a_reader_that_went_away_end_with_status_141(server: str) -> None:
    """``lazily-queue status | head`` as every other command: 141, nothing on stderr."""
    from lazily_queue.cli.status_view import render

    status: dict[str, Any] = {
        "node": "1", "cluster": "c", "state": "leader", "leader": "1", "term": 1,
        "commit_index": 1, "last_applied": 1, "has_quorum": True, "durability": "fsync",
        "members": [{"id": "1", "self": True, "role": "leader", "connected": True,
                     "match_index": 1, "lag": 0}]}
    render(status)  # the document is one the tables read
    ANSWERS["/status.json"] = json.dumps(status).encode()
    ANSWERS["/objects.json"] = json.dumps({
        "kind": "queues", "prefix": "", "offset": 0, "limit": 100, "matching": 0,
        "total": 0, "objects": {}}).encode()
    for words in ((), ("--kind", "queues")):
        done = _status_into_a_closed_pipe(server, *words)
        assert (done.returncode, done.stderr) == (141, "")


def test_no_node_or_no_status_there_is_one_plain_line(
        server: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Nothing listening: the reason as the admin commands give it (not urllib's repr);
    an HTTP error: its status and the start of its body, on the same line."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    assert main(["status", "--url", closed]) == 1
    assert capsys.readouterr().err == (
        f"error: cannot read {closed}/status.json: [Errno 111] Connection refused; is the node "
        "running with `http` set to this address?\n")
    assert main(["status", "--url", server]) == 1  # the server has no /status.json
    assert capsys.readouterr().err == f"error: {server}/status.json answered 404 Not Found: {{}}\n"


def test_a_name_the_terminal_cannot_show_is_written_escaped(server: str) -> None:
    """A terminal whose encoding lacks a name's characters gets an escape, not an error
    blamed on the node."""
    ANSWERS["/objects.json"] = json.dumps({
        "kind": "queues", "prefix": "", "offset": 0, "limit": 100, "matching": 1,
        "total": 1, "objects": {"commandes-été": {"len": 1, "capacity": None,
                                                  "closed": False}}}).encode()
    done = subprocess.run([sys.executable, "-m", "lazily_queue", "status", "--url", server,
                           "--kind", "queues"], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, PYTHONIOENCODING="ascii", COLUMNS="200"))
    assert (done.returncode, done.stderr) == (0, "")
    assert "commandes-\\xe9t\\xe9" in done.stdout
