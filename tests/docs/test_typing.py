"""The examples, and what a user's code does with the public API, pass ``mypy --strict``
against the package (it ships ``py.typed``): the signatures accept what works at run
time and ``connect`` says which client it returns."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

USER_CODE = '''
from lazily_queue import ClientGrant, ClusterClient, Credentials, Node, connect
from lazily_queue.client import CertificateCredentials, Connecting


def member(peers: dict[int, str], named: dict[str, str]) -> list[Node]:
    return [Node(1, data_dir=None, peers=peers), Node("a", data_dir=None, peers=named)]


def grants() -> list[ClientGrant]:
    return [ClientGrant("web", "a-str-token", produce=["jobs"]), ClientGrant("ops", b"bytes-tok")]


def use(client: ClusterClient) -> str | None:
    return client.member


async def clients() -> None:
    token = Credentials("web", "a-str-token")
    use(connect(["tcp://127.0.0.1:1"], token))
    use(connect("tcp://127.0.0.1:1", ("web", "a-str-token")))
    use(connect(["tcp://127.0.0.1:1"], {"name": "web", "token": "a-str-token"}))
    use(connect("tls://h:1", CertificateCredentials("web", "c.pem", "k.pem")))
    async with connect(["tcp://127.0.0.1:1"], token) as client:
        await client.barrier()
        print(client.member)
    broker: Connecting = connect("redis://127.0.0.1:6379/0", "password")
    print(broker)
'''


@pytest.mark.slow
def test_examples_and_user_code_pass_mypy_strict(tmp_path: Path) -> None:
    user = tmp_path / "user_code.py"
    user.write_text(USER_CODE)
    examples = sorted(str(p) for p in (ROOT / "examples").rglob("*.py"))
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-error-summary", *examples, str(user)],
        cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout + out.stderr


TYPED_CELLS = '''
from dataclasses import dataclass
from typing import Any, assert_type

from lazily_queue import ClusterClient, Node, QueueCell, TopicCell
from lazily_queue.client import Client
from lazily_queue.serializers import Serializer, serializer


@dataclass
class Job:
    image: str


JOBS: Serializer[Job] = serializer(lambda job: job.image, Job)


async def typed(node: Node, cluster: ClusterClient, broker: Client) -> None:
    for opener in (node, cluster, broker):
        assert_type(opener.queue("jobs", serializer=JOBS), QueueCell[Job])
        assert_type(opener.topic("news", serializer=JOBS), TopicCell[Job])
        assert_type(opener.queue("raw"), QueueCell[Any])
        assert_type(opener.topic("raw"), TopicCell[Any])
    job: Job = await node.queue("jobs", serializer=JOBS).pop()
    print(job.image)
'''


@pytest.mark.slow
def test_a_typed_serializer_gives_a_typed_cell(tmp_path: Path) -> None:
    """``queue`` and ``topic`` of a node, a cluster client and a broker client return a
    cell of the serializer's type (``Any`` without one)."""
    user = tmp_path / "typed_cells.py"
    user.write_text(TYPED_CELLS)
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-error-summary", str(user)],
        cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout + out.stderr
