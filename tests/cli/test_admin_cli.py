"""``lazily-queue queue|dlq|members`` against three real node processes."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from .node_procs import CLI, NodeProc, unix_peers, wait_for, write_config
from .test_node_processes import free_port

TOKEN = "cli-admin-token-0123456789"
TOKEN_LINE = 'admin_token_env = "LAZILY_TEST_ADMIN"'


def lq(*args: str, token: str | None = TOKEN,
       env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, **(env_extra or {}))
    env.pop("LAZILY_ADMIN_TOKEN", None)
    if token is not None:
        env["LAZILY_ADMIN_TOKEN"] = token
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=60, env=env)


def test_admin_commands_against_node_processes(tmp_path: Path) -> None:
    peers = unix_peers(tmp_path)
    configs = [
        write_config(tmp_path / "n1.toml", 1, peers, extra=TOKEN_LINE,
                     http=f"127.0.0.1:{free_port()}",
                     app='entry = "node_app:seed"\npush = 4\njobs = 5\ndead = 3'),
        write_config(tmp_path / "n2.toml", 2, peers, extra=TOKEN_LINE),
        write_config(tmp_path / "n3.toml", 3, peers, extra=TOKEN_LINE),
    ]
    procs = [NodeProc(c, env={"LAZILY_TEST_ADMIN": TOKEN}) for c in configs]
    try:
        urls = [p.wait_ready() for p in procs]
        procs[0].wait_line("seeded", timeout=30)
        url = urls[2]

        out = lq("queue", "list", "--url", url)
        assert out.returncode == 0, out.stderr
        lines = out.stdout.splitlines()
        assert lines[0].split() == ["kind", "name", "depth", "in", "flight", "dead", "letters",
                                    "subscribers"]
        assert lines[1].split()[:3] == ["queue", "orders", "4"]
        assert lines[2].split()[:5] == ["work_queue", "jobs", "2", "0", "3"]
        assert lines[3].split()[:3] == ["topic", "news", "1"]

        out = lq("dlq", "list", "jobs", "--url", url, "--json")
        assert out.returncode == 0, out.stderr
        assert [d["item_id"] for d in json.loads(out.stdout)["dead_letters"]] == [0, 1, 2]
        out = lq("dlq", "redrive", "jobs", "--item", "1", "--url", url)
        assert (out.returncode, out.stdout.strip()) == (
            0, "redrove 1 dead letter(s) of jobs"), out.stderr
        out = lq("dlq", "redrive", "jobs", "--item", "1", "--item", "2", "--url", url)
        assert (out.returncode, out.stdout.strip()) == (
            0, "redrove 1 dead letter(s) of jobs; 1 of the item ids given is not among its "
            "dead letters (redriven already, or never dead-lettered)"), out.stderr
        out = lq("dlq", "redrive", "jobs", "--url", url)
        assert out.stdout.strip() == "redrove 1 dead letter(s) of jobs"
        wait_for(lambda: all(p.status()["work_queues"]["jobs"]["pending"] == 5
                             and p.status()["work_queues"]["jobs"]["dead_letters"] == 0
                             for p in procs), what="the redrive on every node")

        out = lq("queue", "purge", "orders", "--url", url)
        assert out.stdout.strip() == "purged queue orders: 4 element(s) dropped", out.stderr
        out = lq("queue", "delete-subscriber", "news", "idle", "--url", url)
        assert (out.returncode, out.stdout.strip()) == (
            0, "deleted subscriber idle of topic news"), out.stderr
        wait_for(lambda: all(set(p.status()["topics"]["news"]["subscribers"]) == {"reader"}
                             for p in procs), what="the subscriber deleted on every node")
        out = lq("queue", "delete-subscriber", "news", "idle", "--url", url)
        assert (out.returncode, out.stderr.strip()) == (
            1, "error: not_found: topic 'news' has no subscriber 'idle'; nothing was deleted")
        out = lq("queue", "delete-subscriber", "nothing", "idle", "--url", url)
        assert (out.returncode, out.stderr.strip()) == (
            1, "error: not_found: topic 'nothing' has not been declared")
        out = lq("queue", "delete", "news", "--url", url)
        assert out.stdout.strip() == "deleted topic news (it held 1)", out.stderr
        wait_for(lambda: all(p.status()["queues"]["orders"]["len"] == 0
                             and "news" not in p.status()["topics"] for p in procs),
                 what="the purge and delete on every node")

        # --config reads the address and the token from the node's file.
        out = lq("members", "list", "--config", str(configs[0]), token=None,
                 env_extra={"LAZILY_TEST_ADMIN": TOKEN})
        assert out.returncode == 0, out.stderr
        assert "(this node)" in out.stdout.splitlines()[1]
        out = lq("members", "list", "--url", url, "--json")
        members = json.loads(out.stdout)["members"]
        leader = next(m["id"] for m in members if m["role"] == "leader")
        assert [m["id"] for m in members] == ["1", "2", "3"]
        assert all(m["reachable"] and m["page"] for m in members)
        follower = next(m for m in members if m["role"] == "follower")
        out = lq("members", "transfer", follower["id"], "--url", url)  # asks the leader
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == f"node {follower['id']} leads now"
        if leader != "3":
            assert "(asking the leader" in out.stderr
        wait_for(lambda: procs[2].status()["leader"] == follower["id"],
                 what="the new leader known")

        # One-line errors.
        out = lq("queue", "purge", "nothing", "--url", url)
        assert out.returncode == 1
        assert out.stderr.strip() == ("error: not_found: no queue, work queue or topic is "
                                      "called 'nothing'")
        out = lq("queue", "list", "--url", url, token="wrong-token-wrong-token")
        assert out.returncode == 1 and out.stderr.startswith("error: unauthorized: wrong admin")
        assert len(out.stderr.strip().splitlines()) == 1
        out = lq("queue", "list", "--url", url, token=None)
        assert out.returncode == 2 and "LAZILY_ADMIN_TOKEN" in out.stderr
        out = lq("dlq", "list", "orders", "--url", url)
        assert out.returncode == 1 and "not_found" in out.stderr
        out = lq("members", "remove", "7", "--url", url)
        assert out.returncode == 1 and "node 7 is not a member" in out.stderr
        dead_url = "http://127.0.0.1:9"
        out = lq("queue", "list", "--url", dead_url)
        assert out.returncode == 1 and out.stderr.startswith(f"error: cannot reach {dead_url}")

        # Remove a member (through a follower: the command asks the leader).
        out = lq("members", "remove", "3", "--url", urls[1 if follower["id"] != "2" else 0])
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "removed node 3; stop it now"
        wait_for(lambda: [m["id"] for m in procs[0].status()["members"]] == ["1", "2"],
                 what="member 3 removed")

        # Remove the leader through the other member: the leader hands leadership to it,
        # and the command asks it in turn.
        kept = "1" if follower["id"] == "2" else "2"
        out = lq("members", "remove", follower["id"], "--url", urls[int(kept) - 1])
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == f"removed node {follower['id']}; stop it now"
        assert out.stderr.count("(asking the leader") == 2, out.stderr
        wait_for(lambda: [m["id"] for m in procs[int(kept) - 1].status()["members"]] == [kept],
                 what="the old leader removed")
    finally:
        codes = [p.terminate() for p in procs]
    assert codes[int(kept) - 1] == 0, [p.stderr() for p in procs]
