"""An admin command sent to a follower that names a leader which has just stopped: one
line saying that nothing was asked of the leader and to ask again once one is elected."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

from .node_procs import CLI


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_named_leader_cannot_be_reached() -> None:
    gone = f"http://127.0.0.1:{_closed_port()}"

    class Follower(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.dumps({"error": {"code": "not_leader", "message": "node 2 is not the "
                                         "leader", "leader": "1", "leader_page": gone}})
            self.send_response(409)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Follower)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    env = dict(os.environ, LAZILY_ADMIN_TOKEN="leader-gone-admin-token")
    try:
        done = subprocess.run([*CLI, "members", "remove", "3", "--url", url],
                              capture_output=True, text=True, timeout=60, env=env)
    finally:
        server.shutdown()
        server.server_close()
    assert done.returncode == 1, done.stdout
    lines = done.stderr.splitlines()
    assert lines[0] == f"(asking the leader, node 1 at {gone})"
    assert len(lines) == 2 and lines[1].startswith(
        f"error: node 1, the leader {url} named, cannot be reached at {gone} ("), lines
    assert lines[1].endswith("nothing was asked of it: it may have just stopped, so ask again "
                             "once a leader is elected (`lazily-queue status --require-leader` "
                             "waits for one)")
