"""RabbitMQ for ``benchmarks/peers.py``: one ``rabbitmq-server`` node on loopback, quorum
queues (a Raft log whose write-ahead log is fdatasynced before a publisher confirm leaves),
publisher confirms on, aiormq (asyncio) clients.

The node runs from the run directory: its own node name, Erlang cookie, ``epmd`` (started
here on a free port), AMQP and distribution ports, data and logs. Produce is
``basic.publish`` with 256 confirms outstanding on one channel; consumers are
``basic.consume`` with a prefetch of :data:`~benchmarks.peers_common.BATCH`, acking each
message (AMQP acks are not confirmed), on a second connection. The work queue is 8
consumers of one queue; fan-out is a fanout exchange bound to 4 quorum queues, one
consumer each. One node, so its 1-in-flight latency fills both latency rows.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shutil
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import aiormq
from aiormq.abc import AbstractChannel, AbstractConnection, ArgumentsType, DeliveredMessage

from benchmarks.peers_common import (
    BATCH,
    PAYLOAD,
    Server,
    free_port,
    listening,
    rate,
    serial_latency,
    spread,
)

#: Seconds a node has to boot (about 6 on an idle 2-core machine).
START_TIMEOUT = 90.0
QUORUM: ArgumentsType = {"x-queue-type": "quorum"}
PERSISTENT = aiormq.spec.Basic.Properties(delivery_mode=2)


def server_script() -> str:
    """The ``rabbitmq-server`` start script on ``PATH``. Debian's is a wrapper that
    switches to the ``rabbitmq`` user and the system's directories; the script it wraps,
    beside it, takes the directories from the environment."""
    found = shutil.which("rabbitmq-server")
    if found is None:
        raise RuntimeError("rabbitmq-server not found: apt install rabbitmq-server")
    real = Path(found).resolve()
    if real.name == "rabbitmq-script-wrapper" and (real.parent / "rabbitmq-server").exists():
        return str(real.parent / "rabbitmq-server")
    return found


def node_env(root: Path, node: str, amqp: int, dist: int, epmd: int) -> dict[str, str]:
    """The environment of a node living in ``root``: nothing of it in the system's
    directories, every port given, the distribution on loopback only."""
    (root / "rabbitmq.conf").write_text(f"listeners.tcp.default = 127.0.0.1:{amqp}\n")
    (root / "enabled_plugins").write_text("[].\n")
    cookie = root / ".erlang.cookie"
    if not cookie.exists():
        fd = os.open(cookie, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
        with os.fdopen(fd, "w") as out:
            out.write(secrets.token_hex(20))
    return dict(
        os.environ, HOME=str(root), ERL_EPMD_PORT=str(epmd),
        ERL_CRASH_DUMP=str(root / "erl_crash.dump"), RABBITMQ_NODENAME=node,
        RABBITMQ_NODE_IP_ADDRESS="127.0.0.1", RABBITMQ_NODE_PORT=str(amqp),
        RABBITMQ_DIST_PORT=str(dist), RABBITMQ_MNESIA_BASE=str(root / "mnesia"),
        RABBITMQ_LOG_BASE=str(root / "log"), RABBITMQ_LOGS="-",
        RABBITMQ_CONFIG_FILE=str(root / "rabbitmq.conf"),
        RABBITMQ_ADVANCED_CONFIG_FILE=str(root / "advanced.config"),
        RABBITMQ_ENABLED_PLUGINS_FILE=str(root / "enabled_plugins"),
        RABBITMQ_CONF_ENV_FILE=str(root / "rabbitmq-env.conf"),
        RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS=(
            "-start_epmd false -kernel inet_dist_use_interface {127,0,0,1}"))


@contextlib.asynccontextmanager
async def node(root: Path) -> AsyncIterator[str]:
    """A RabbitMQ node in ``root`` (created), listening; yields its AMQP URL. The node
    and its ``epmd`` are stopped however the block ends."""
    root.mkdir(parents=True)  # noqa: ASYNC240 - set-up
    script = server_script()
    epmd_port = amqp_port = 0

    def epmd(attempt: int) -> tuple[list[Server], list[int]]:
        nonlocal epmd_port
        epmd_port = free_port()
        return [Server(["epmd", "-d", "-port", str(epmd_port), "-address", "127.0.0.1"],
                       root / f"epmd{attempt}.log")], [epmd_port]

    def rabbit(attempt: int) -> tuple[list[Server], list[int]]:
        nonlocal amqp_port
        amqp_port = free_port()
        name = f"lazily-peers-{os.getpid()}-{attempt}@localhost"
        env = node_env(root, name, amqp_port, free_port(), epmd_port)
        return [Server([script], root / f"rabbit{attempt}.log", env=env,
                       start_timeout=START_TIMEOUT)], [amqp_port]

    async with listening(epmd), listening(rabbit):
        yield f"amqp://guest:guest@127.0.0.1:{amqp_port}/"


async def _queue(channel: AbstractChannel, name: str) -> str:
    await channel.queue_declare(name, durable=True, arguments=QUORUM)
    return name


def _publisher(channel: AbstractChannel, queue: str = "",
               exchange: str = "") -> Callable[[], Awaitable[Any]]:
    """One publish, returning once the node confirmed it."""
    async def publish() -> None:
        confirm = await channel.basic_publish(PAYLOAD, exchange=exchange, routing_key=queue,
                                              properties=PERSISTENT)
        if not isinstance(confirm, aiormq.spec.Basic.Ack):
            raise RuntimeError(f"publish to {queue or exchange} not confirmed: {confirm}")

    return publish


async def _consume(connection: AbstractConnection, queue: str,
                   delivered: Callable[[], None]) -> AbstractChannel:
    """A consumer of ``queue`` on a channel of its own (returned), prefetch
    :data:`BATCH`, acking each message and then calling ``delivered``."""
    channel = await connection.channel(publisher_confirms=False)
    await channel.basic_qos(prefetch_count=BATCH)

    async def on_message(message: DeliveredMessage) -> None:
        assert message.delivery_tag is not None
        await channel.basic_ack(message.delivery_tag)
        delivered()

    await channel.basic_consume(queue, on_message)
    return channel


class _Count:
    """Deliveries counted towards ``target``; ``done`` is set on reaching it."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.got = 0
        self.done = asyncio.Event()

    def __call__(self) -> None:
        self.got += 1
        if self.got >= self.target:
            self.done.set()


async def produce(channel: AbstractChannel, count: int) -> dict[str, Any]:
    publish = _publisher(channel, await _queue(channel, "produce"))
    started = time.perf_counter()
    await spread(count, publish)
    return {"produce_per_s": rate(count, time.perf_counter() - started)}


async def _flow(channel: AbstractChannel, consumers: AbstractConnection, count: int,
                queues: list[str], per_queue: int, exchange: str = "") -> float:
    """Seconds from the first publish of ``count`` (to ``exchange``, or to the one queue)
    until the ``per_queue`` consumers of each of ``queues`` have acked all of them."""
    counts = [_Count(count) for _ in queues]
    channels = [await _consume(consumers, queue, counter)
                for queue, counter in zip(queues, counts, strict=True)
                for _ in range(per_queue)]
    try:
        publish = _publisher(channel, "" if exchange else queues[0], exchange)
        started = time.perf_counter()
        await spread(count, publish)
        await asyncio.gather(*(counter.done.wait() for counter in counts))
        return time.perf_counter() - started
    finally:
        for consumer in channels:
            await consumer.close()


async def end_to_end(channel: AbstractChannel, consumers: AbstractConnection,
                     count: int) -> dict[str, Any]:
    elapsed = await _flow(channel, consumers, count, [await _queue(channel, "e2e")], 1)
    return {"end_to_end_per_s": rate(count, elapsed)}


async def work_queue(channel: AbstractChannel, consumers: AbstractConnection,
                     count: int) -> dict[str, Any]:
    elapsed = await _flow(channel, consumers, count, [await _queue(channel, "jobs")], 8)
    return {"work_queue_per_s": rate(count, elapsed)}


async def fanout(channel: AbstractChannel, consumers: AbstractConnection,
                 count: int) -> dict[str, Any]:
    await channel.exchange_declare("fan", exchange_type="fanout", durable=True)
    queues = [await _queue(channel, f"subscriber{s}") for s in range(4)]
    for queue in queues:
        await channel.queue_bind(queue, "fan")
    elapsed = await _flow(channel, consumers, count, queues, 1, exchange="fan")
    return {"fanout_per_s": rate(4 * count, elapsed)}


async def one_in_flight(channel: AbstractChannel, samples: int) -> dict[str, Any]:
    figures = await serial_latency(samples, _publisher(channel,
                                                       await _queue(channel, "latency")))
    p50, p99 = figures["p50_ms"], figures["p99_ms"]
    return {"p50_ms_3": p50, "p99_ms_3": p99, "p50_ms_1": p50, "p99_ms_1": p99}


async def run(root: Path, count: int, samples: int, latency: bool = False) -> dict[str, Any]:
    """Every workload, or with ``latency`` the 1-in-flight latency only."""
    figures: dict[str, Any] = {}
    async with node(root) as url, aiormq.connect(url) as publishers, \
            aiormq.connect(url) as consumers:
        version = publishers.server_properties.get("version", "?")
        channel = await publishers.channel(publisher_confirms=True)
        if not latency:
            figures.update(await produce(channel, count))
            figures.update(await end_to_end(channel, consumers, count))
            figures.update(await work_queue(channel, consumers, count))
            figures.update(await fanout(channel, consumers, count))
        figures.update(await one_in_flight(channel, samples))
    client = f"aiormq {metadata.version('aiormq')}"
    figures["notes"] = [
        f"RabbitMQ (rabbitmq-server {version!s}, {client}): one node, quorum queues (the "
        "Raft write-ahead log is fdatasynced before a publisher confirm), persistent "
        f"messages, publisher confirms; consumers basic.consume with prefetch {BATCH} and "
        "ack each message (acks are not confirmed), on a second connection; fan-out is a "
        "fanout exchange to 4 quorum queues; being one node, its 1-in-flight latency "
        "fills both latency rows"]
    return figures
