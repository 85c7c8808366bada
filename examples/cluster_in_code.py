"""The three-node cluster of the README's walkthrough, built in code instead of TOML.

Run three processes with the same secret; each stops cleanly on SIGINT or SIGTERM (Ctrl-C
reaches only the one in the foreground: stop the two in the background with ``kill``)::

    export APP_CLUSTER_SECRET=$(openssl rand -hex 32)
    python examples/cluster_in_code.py 1 & python examples/cluster_in_code.py 2 &
    python examples/cluster_in_code.py 3      # Ctrl-C stops node 3
    kill %1 %2                                # then nodes 1 and 2
"""
import asyncio
import os
import signal
import sys

from lazily_queue import LazilyQueueError, Node

PEERS = {1: "tcp://127.0.0.1:7201", 2: "tcp://127.0.0.1:7202", 3: "tcp://127.0.0.1:7203"}


async def main(my_id: int) -> None:
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    secret = os.environ["APP_CLUSTER_SECRET"]          # the same on every node
    async with Node(my_id, data_dir=f"data/{my_id}", peers=PEERS, secret=secret) as node:
        leader = await node.wait_for_leader(timeout=30)
        print(f"node {my_id} is up; the leader is node {leader}", flush=True)
        await stop.wait()                              # serve until stopped


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in {"1", "2", "3"}:
        sys.exit("cluster_in_code.py: give this node's id, 1, 2 or 3 (see the docstring)")
    if not os.environ.get("APP_CLUSTER_SECRET"):
        sys.exit("cluster_in_code.py: export APP_CLUSTER_SECRET first, the same on every node")
    try:
        asyncio.run(main(int(sys.argv[1])))
    except LazilyQueueError as exc:  # the data directory in use, a peer refusing this node, ...
        sys.exit(f"cluster_in_code.py: {type(exc).__name__}: {exc}")
