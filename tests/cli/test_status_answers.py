"""``lazily-queue status`` against an HTTP server that is not a node of this version, and
with its output's reader gone: one line and a status, never a traceback."""

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

#: What the server answers, by path (without the query).
ANSWERS: dict[str, bytes] = {}


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = ANSWERS.get(self.path.split("?")[0])
        self.send_response(200 if body is not None else 404)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body or b"{}")

    def log_message(self, *_: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
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
