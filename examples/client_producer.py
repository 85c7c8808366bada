"""A plain script pushing jobs to a running cluster as a client (a cron job, a service).

It is no member: it links to one of the members (the leader when it can), authenticates
with its own token and pushes to the ``jobs`` work queue the job API's workers take.
Each push is acknowledged once committed on a majority; a member dying meanwhile is
survived (the push goes through another one, applied once). Its members list a
``[[client]]`` named ``producer`` with ``produce = ["jobs"]``::

    export PRODUCER_TOKEN=...               # the token of client "producer"
    python examples/client_producer.py unix:///run/orders/1.sock unix:///run/orders/2.sock
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys

from lazily_queue import Credentials, LazilyQueueError, connect


async def produce(members: list[str], count: int, first: int) -> None:
    credentials = Credentials.from_env("producer", "PRODUCER_TOKEN")
    async with connect(members, credentials) as client:
        jobs = client.work_queue("jobs", visibility_timeout=10, max_deliveries=5)
        for n in range(first, first + count):
            item = await jobs.push({"n": n})
            print(f"pushed n={n} as job {item}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("members", nargs="+", help="addresses of the cluster's members")
    parser.add_argument("--count", type=int, default=10, help="jobs to push")
    parser.add_argument("--first", type=int, default=0, help="the first job's n")
    args = parser.parse_args()
    try:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(produce(args.members, args.count, args.first))
    except LazilyQueueError as exc:  # no token, refused credentials or permissions, no member
        sys.exit(f"client_producer.py: {type(exc).__name__}: {exc}")


if __name__ == "__main__":
    main()
