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
