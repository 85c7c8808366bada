"""An admin command whose node accepts the connection but does not answer in time: one
line saying so and what to check, not the socket's bare ``timed out``."""

from __future__ import annotations

import os
import subprocess

from tests.canned_server import canned_server

from .node_procs import CLI


def test_a_node_that_does_not_answer_in_time() -> None:
    env = dict(os.environ, LAZILY_ADMIN_TOKEN="timeout-test-admin-token")
    with canned_server(None) as port:
        url = f"http://127.0.0.1:{port}"
        change = ("what was asked may still be done: check (`lazily-queue status`, `members "
                  "list`) before asking again")
        for args, promise in ((("members", "transfer"), change),
                              (("members", "list"), "nothing was asked to change")):
            done = subprocess.run([*CLI, *args, "--url", url, "--timeout", "0.5"],
                                  capture_output=True, text=True, timeout=60, env=env)
            assert done.returncode == 1, done.stdout
            assert done.stderr.splitlines() == [
                f"error: {url} did not answer within 0.5 s (--timeout); {promise}"], done.stderr
