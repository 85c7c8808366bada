"""A member stopped cleanly (SIGTERM) says so before its links close: the others log its
stop at INFO, with no WARNING, and a stopping leader first hands leadership over, while
the pushes of an app on another member go on, none lost or applied twice."""

from __future__ import annotations

from pathlib import Path

from .node_procs import NodeProc, unix_peers, wait_for, write_config
from .test_admin_cli import TOKEN, TOKEN_LINE, lq


def _warnings(text: str) -> list[str]:
    return [line for line in text.splitlines() if " WARNING " in line or " ERROR " in line]


def _start(tmp_path: Path, app: str = "") -> tuple[dict[int, NodeProc], int]:
    peers = unix_peers(tmp_path)
    procs = {i: NodeProc(write_config(tmp_path / f"n{i}.toml", i, peers, extra=TOKEN_LINE,
                                      app=app if i == 1 else ""),
                         env={"LAZILY_TEST_ADMIN": TOKEN})
             for i in peers}
    for proc in procs.values():
        proc.wait_ready()
        proc.wait_line("leader ")
    leader = int(procs[1].status()["leader"])
    for i, proc in procs.items():  # every link up and reported, so what follows is new
        wait_for(lambda proc=proc, i=i: all(
            f"member {j} reachable" in proc.stderr() for j in procs if j != i),
            what="every link up")
    return procs, leader


def test_a_follower_stopped_cleanly_is_reported_at_info(tmp_path: Path) -> None:
    procs, leader = _start(tmp_path)
    try:
        victim = min(i for i in procs if i != leader)
        others = {i: p for i, p in procs.items() if i != victim}
        marks = {i: len(p.stderr()) for i, p in others.items()}
        assert procs[victim].terminate() == 0
        line = f"member {victim} stopped (it said so before closing its links)"
        for i, proc in others.items():
            wait_for(lambda proc=proc: line in proc.stderr(), what=f"node {i}: {line}")
        for i, proc in others.items():
            said = proc.stderr()[marks[i]:]
            assert f" INFO lazily_queue.state: node {i}: {line}" in said, said
            assert f"member {victim} lost" not in said and not _warnings(said), said
    finally:
        for proc in procs.values():
            proc.terminate()


def test_a_leader_stopped_cleanly_hands_leadership_over_first(tmp_path: Path) -> None:
    stop = tmp_path / "stop"
    app = f'entry = "node_app:paced"\nrate = 100\ncount = 1000000\nstop = "{stop}"'
    procs, leader = _start(tmp_path, app)
    try:
        if leader == 1:  # the producer runs on node 1, which must outlive the stop
            assert procs[1].url is not None
            out = lq("members", "transfer", "2", "--url", procs[1].url)
            assert out.returncode == 0, out.stderr
            leader = 2
        survivors = {i: p for i, p in procs.items() if i != leader}
        wait_for(lambda: procs[1].status()["queues"].get("q", {}).get("len", 0) > 50,
                 what="the producer under way")
        marks = {i: len(p.stderr()) for i, p in survivors.items()}
        assert procs[leader].terminate() == 0
        said = procs[leader].stderr()
        handed = [line for line in said.splitlines() if "leadership handed to node" in line]
        assert len(handed) == 1, said
        new = int(handed[0].split("leadership handed to node ")[1].split()[0])
        assert new in survivors, handed
        assert handed[0].endswith(f"node {leader}: leadership handed to node {new} "
                                  "before stopping"), handed
        for i, proc in survivors.items():
            wait_for(lambda proc=proc: f"member {leader} stopped" in proc.stderr(),
                     what=f"node {i} saw node {leader} stop")
            assert proc.status()["leader"] == str(new)
        stop.touch()
        done = procs[1].wait_line("pushed ", timeout=60)
        pushed = int(done.split()[1])
        assert done.startswith(f"pushed {pushed} failed 0 "), done
        wait_for(lambda: all(p.status()["queues"]["q"]["len"] == pushed
                             for p in survivors.values()),
                 what="every push applied once on every survivor")
        for i, proc in survivors.items():
            after = proc.stderr()[marks[i]:]
            assert not _warnings(after), after
            assert f"leader elected: {'this node' if i == new else f'node {new}'}" in after
    finally:
        for proc in procs.values():
            proc.terminate()

