"""``lazily-queue node`` and ``lazily-queue status`` as real processes on real sockets."""

from __future__ import annotations

import json
import socket
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

from .node_procs import CLI, NodeProc, unix_peers, wait_for, write_config


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_three_nodes_status_metrics_and_clean_stop(tmp_path: Path) -> None:
    peers = unix_peers(tmp_path)
    port = free_port()
    configs = [
        write_config(tmp_path / "n1.toml", 1, peers,
                     app='entry = "node_app:run"\npush = 5\njobs = 3'),
        # a fixed HTTP port, so that `status --config` finds it
        write_config(tmp_path / "n2.toml", 2, peers, http=f"127.0.0.1:{port}"),
        write_config(tmp_path / "n3.toml", 3, peers),
    ]
    procs = [NodeProc(c) for c in configs]
    try:
        urls = [p.wait_ready() for p in procs]
        assert urls[1] == f"http://127.0.0.1:{port}"
        for p in procs:
            p.wait_line("leader ")

        def replicated() -> bool:
            return all(p.status()["queues"].get("orders", {}).get("len") == 5
                       and p.status()["work_queues"].get("jobs", {}).get("pending") == 3
                       for p in procs)

        wait_for(replicated, what="the app's pushes on every node")
        leader = procs[0].status()["leader"]

        out = subprocess.run([*CLI, "status", "--url", urls[2]], capture_output=True,
                             text=True, timeout=30)
        assert out.returncode == 0, out.stderr
        assert "node 3 of cluster 'test'" in out.stdout
        assert "orders" in out.stdout and "jobs" in out.stdout
        assert "(this node)" in out.stdout
        assert "durability" in out.stdout and "durabil\u2026" not in out.stdout  # not cut

        out = subprocess.run([*CLI, "status", "--config", str(configs[1]), "--json"],
                             capture_output=True, text=True, timeout=30)
        assert out.returncode == 0, out.stderr
        doc = json.loads(out.stdout)
        assert doc["node"] == "2" and doc["leader"] == leader
        assert [m["id"] for m in doc["members"]] == ["1", "2", "3"]
        assert doc["queues"]["orders"]["len"] == 5
        assert doc["totals"]["pending"] == 3
        assert doc["commit_index"] >= doc["last_applied"] > 0

        leader_proc = procs[int(leader) - 1]
        def caught_up() -> dict[str, Any] | None:
            doc = leader_proc.status()
            return doc if all(m["lag"] == 0 and m["connected"] for m in doc["members"]) else None

        lead = wait_for(caught_up, what="every member caught up")
        assert lead["leadership"]["term"] == lead["term"]
        with urllib.request.urlopen(urls[0] + "/metrics", timeout=5) as response:
            metrics = response.read().decode()
        assert 'lazily_queue_queue_depth{name="orders"} 5.0' in metrics
        assert 'lazily_queue_work_pending{name="jobs"} 3.0' in metrics
        assert "lazily_queue_http_open_connections_limit 256.0" in metrics
        assert "lazily_queue_http_refused_connections_total 0.0" in metrics
        with urllib.request.urlopen(urls[0] + "/", timeout=5) as response:
            assert b"lazily-queue node status" in response.read()
    finally:
        codes = [p.terminate() for p in procs]
    assert codes == [0, 0, 0], [p.stderr() for p in procs]


def test_status_of_a_node_that_is_not_running(tmp_path: Path) -> None:
    out = subprocess.run([*CLI, "status", "--url", f"127.0.0.1:{free_port()}"],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 1
    assert "is the node running with `http` set to this address?" in out.stderr


def test_a_failing_app_stops_the_node_with_status_1(tmp_path: Path) -> None:
    config = write_config(tmp_path / "n1.toml", 1, unix_peers(tmp_path, (1,)),
                          app='entry = "node_app:run"\nfail = true')
    proc = NodeProc(config)
    assert proc.wait_exit() == 1
    assert "the app failed on purpose" in proc.stderr()


def test_an_app_entry_that_cannot_be_imported(tmp_path: Path) -> None:
    config = write_config(tmp_path / "n1.toml", 1, unix_peers(tmp_path, (1,)),
                          app='entry = "no_such_module:run"')
    proc = NodeProc(config)
    assert proc.wait_exit() == 2
    assert "cannot import 'no_such_module'" in proc.stderr()


def test_wrong_secret_fails_fast(tmp_path: Path) -> None:
    peers = unix_peers(tmp_path)
    one = NodeProc(write_config(tmp_path / "n1.toml", 1, peers), secret="right")
    two = NodeProc(write_config(tmp_path / "n2.toml", 2, peers), secret="wrong")
    try:
        assert two.wait_exit() == 2
        assert one.wait_exit() == 2
    finally:
        one.terminate()
        two.terminate()
    assert "wrong secret" in two.stderr() + one.stderr()
    assert "same `cluster` and secret" in two.stderr()


def test_a_node_unknown_to_its_peers_is_refused(tmp_path: Path) -> None:
    members = unix_peers(tmp_path, (5, 6))
    cluster = [NodeProc(write_config(tmp_path / f"n{i}.toml", i, members)) for i in (5, 6)]
    try:
        for proc in cluster:
            proc.wait_line("leader ")
        stranger = NodeProc(write_config(tmp_path / "n4.toml", 4,
                                         {**members, **unix_peers(tmp_path, (4,))}))
        assert stranger.wait_exit() == 2
        assert "peer 4 is not a member of this mesh" in stranger.stderr()
        assert all(proc.proc.poll() is None for proc in cluster)  # they keep serving
    finally:
        codes = [proc.terminate() for proc in cluster]
    assert codes == [0, 0]


def test_two_nodes_with_one_id(tmp_path: Path) -> None:
    peers = unix_peers(tmp_path, (1, 2))
    config = write_config(tmp_path / "n1.toml", 1, peers)
    real = [NodeProc(config), NodeProc(write_config(tmp_path / "n2.toml", 2, peers))]
    try:
        for proc in real:
            proc.wait_line("leader ")
        # the same file started twice: the data directory is locked
        twin = NodeProc(config)
        assert twin.wait_exit() == 2
        assert "is in use by another running node" in twin.stderr()
        # another copy with its own directory and socket, and a peer address that is
        # node 1's: node 1 refuses a second node 1
        (tmp_path / "copy").mkdir()
        copy = NodeProc(write_config(tmp_path / "copy" / "n1.toml", 1,
                                     {1: f"unix:{tmp_path}/copy/n1.sock", 2: peers[1]}))
        assert copy.wait_exit() == 2
        assert "two nodes share one id" in copy.stderr()
        assert all(proc.proc.poll() is None for proc in real)
    finally:
        codes = [proc.terminate() for proc in real]
    assert codes == [0, 0]


def test_listen_address_in_use(tmp_path: Path) -> None:
    first = NodeProc(write_config(tmp_path / "n1.toml", 1, unix_peers(tmp_path, (1,))))
    try:
        first.wait_line("leader ")
        clash = NodeProc(write_config(tmp_path / "n2.toml", 2, {2: f"unix:{tmp_path}/n1.sock"}))
        assert clash.wait_exit() == 2
        err = clash.stderr()
        assert err.startswith(
            f"error: {tmp_path / 'n2.toml'}: node 2 cannot listen on unix:{tmp_path}/n1.sock: "
            f"a listener is already bound to {tmp_path}/n1.sock: another process, or another "
            "node in this one, listens there; stop it, or give this node another `listen` "
            "address"), err
        assert err.count("\n") == 1, err
    finally:
        assert first.terminate() == 0


def test_a_data_dir_of_another_cluster(tmp_path: Path) -> None:
    peers = unix_peers(tmp_path, (1,))
    alpha = NodeProc(write_config(tmp_path / "a.toml", 1, peers, cluster="alpha",
                                  data_dir="shared"))
    alpha.wait_line("leader ")
    assert alpha.terminate() == 0
    beta = NodeProc(write_config(tmp_path / "b.toml", 1, peers, cluster="beta",
                                 data_dir="shared"))
    assert beta.wait_exit() == 2
    err = beta.stderr()
    meta = tmp_path / "shared" / "raft" / "journal.meta"
    assert err.startswith(
        f"error: {tmp_path / 'b.toml'}: data directory {tmp_path / 'shared'} belongs to node 1 "
        f"of cluster 'alpha' (as {meta} records), but this node's `id` and `cluster` are 1 "
        "and 'beta'; nothing was changed. Give every node its own data directory"), err
    assert err.count("\n") == 1, err


def test_no_quorum_within_the_startup_timeout(tmp_path: Path) -> None:
    config = write_config(tmp_path / "n1.toml", 1, unix_peers(tmp_path),
                          extra="startup_timeout = 1")
    lonely = NodeProc(config)
    assert lonely.wait_exit() == 2
    err = lonely.stderr()
    assert "no leader within startup_timeout=1s" in err
    assert f"peer 2 (unix:{tmp_path}/n2.sock)" in err and "peer 3" in err


def test_missing_secret_exits_2(tmp_path: Path) -> None:
    proc = NodeProc(write_config(tmp_path / "n1.toml", 1, unix_peers(tmp_path)), secret=None)
    assert proc.wait_exit() == 2
    assert "LAZILY_TEST_SECRET" in proc.stderr()


def test_refused_nodes_with_ids_above_every_member_fail_fast(tmp_path: Path) -> None:
    # Members 1 and 2 know node 3 at a stale address, so they never reach it; nodes
    # with the highest ids are never dialed and must find out by probing the members.
    members = unix_peers(tmp_path, (1, 2))
    listed = {**members, 3: f"unix:{tmp_path}/stale3.sock"}
    cluster = [NodeProc(write_config(tmp_path / f"n{i}.toml", i, listed)) for i in (1, 2)]
    try:
        for proc in cluster:
            proc.wait_line("leader ")

        def stranger(name: str, node_id: int, *, secret: str = "s3cret", cluster: str = "test",
                     extra: str = "") -> NodeProc:
            peers = {**members, node_id: f"unix:{tmp_path}/{name}.sock"}
            config = write_config(tmp_path / f"{name}.toml", node_id, peers, cluster=cluster,
                                  data_dir=f"data-{name}", extra=extra)
            return NodeProc(config, secret=secret)

        wrong_secret = stranger("wrong-secret", 3, secret="wrong")
        assert wrong_secret.wait_exit(timeout=30) == 2
        line = wrong_secret.stderr().strip().splitlines()[-1]
        assert line.startswith("error: ") and "wrong secret" in line and "secret_env" in line

        unknown = stranger("unknown", 9)
        assert unknown.wait_exit(timeout=30) == 2
        line = unknown.stderr().strip().splitlines()[-1]
        assert "peer 9 is not a member" in line and "member's [peers]" in line

        other_cluster = stranger("other-cluster", 8, cluster="other")
        assert other_cluster.wait_exit(timeout=30) == 2
        line = other_cluster.stderr().strip().splitlines()[-1]
        assert "session_id" in line and "cluster names differ" in line

        # Right credentials, but the members dial a stale address: not fatal, and the
        # startup report names what the members do.
        stale = stranger("stale", 3, extra="startup_timeout = 2")
        assert stale.wait_exit(timeout=30) == 2
        line = stale.stderr().strip().splitlines()[-1]
        assert "no leader within startup_timeout=2s" in line
        assert "accepted our credentials but has not dialed us" in line
        assert f"dials node 3 at unix:{tmp_path}/stale3.sock" in line
        assert (f"or this process may be a stale copy of node 3, a member now at "
                f"unix:{tmp_path}/stale3.sock (the address the others know): stop it" in line)
        assert all(proc.proc.poll() is None for proc in cluster)  # they keep serving
    finally:
        codes = [proc.terminate() for proc in cluster]
    assert codes == [0, 0]


def _follower_of_2(*, proof: str | None) -> dict[str, Any]:
    """A follower's status whose leader's vitals (``proof``) say its disk is full."""
    import time

    journal = {"writable": False, "error": "No space left on device"}
    return {"node": "1", "cluster": "c", "leader": "2", "state": "follower", "term": 2,
            "members": [
        {"id": "1", "self": True, "reachable": True},
        {"id": "2", "self": False, "reachable": True, "vitals_proof": proof,
         "vitals_at": time.time(), "vitals": {"journal": journal}}]}


#: What every node's status holds beside the fields a test sets.
NODE = {"node": "1", "cluster": "c"}


def test_status_require_leader_fails_until_the_node_knows_one() -> None:
    import http.server
    import threading

    documents = [{**NODE, "leader": None, "state": "candidate", "term": 1},
                 {**NODE, "leader": "2", "state": "leader", "term": 2,
                  "disk": {"writable": False, "error": "No space left on device"}},
                 _follower_of_2(proof="proven"), _follower_of_2(proof=None),
                 {**NODE, "leader": "2", "state": "follower", "term": 2}]

    class Status(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps(documents[0]).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Status)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"127.0.0.1:{server.server_address[1]}"
        cmd = [*CLI, "status", "--url", url, "--json", "--require-leader"]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        assert out.returncode == 3
        assert "knows no leader yet (state candidate, term 1)" in out.stderr
        documents.pop(0)
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        assert out.returncode == 3
        assert "leads, but its journal is not writable, so it may no longer lead" in out.stderr
        documents.pop(0)
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        assert out.returncode == 3, out.stderr
        assert out.stderr.startswith(
            "error: the leader (node 2) says its journal is not writable, so it may no longer "
            "lead: it drops what the others send and they may elect another (its proven "
            "vitals read "), out.stderr
        assert "No space left on device; state follower, term 2)" in out.stderr
        documents.pop(0)  # vitals not proven with the secret: not taken as the leader's
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        assert out.returncode == 0, out.stderr
        documents.pop(0)
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        assert out.returncode == 0 and json.loads(out.stdout)["leader"] == "2"
    finally:
        server.shutdown()
