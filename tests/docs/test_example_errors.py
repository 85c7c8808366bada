"""The example programs, started wrong as a newcomer starts them: each says what is wrong
in one `NAME: ...` line on stderr and exits with a failure status, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NOWHERE = "unix:///nonexistent-lazily-dir/member.sock"
SECRET_UNSET = """\
id = 1
data_dir = "data/1"
listen = "unix:member.sock"
secret_env = "LAZILY_TEST_UNSET_SECRET"
"""

# (script and arguments, variables set, what the last line of stderr must say)
CASES = {
    "producer without its token": (
        ["client_producer.py", NOWHERE], {}, "PRODUCER_TOKEN is not set"),
    "producer and no member": (
        ["client_producer.py", NOWHERE], {"PRODUCER_TOKEN": "producer-token"},
        "no member accepted"),
    "sse client without its token": (
        ["sse_fanout.py", "--connect", NOWHERE, "--port", "0"], {}, "SSE_TOKEN is not set"),
    "sse client and no member": (
        ["sse_fanout.py", "--connect", NOWHERE, "--port", "0"], {"SSE_TOKEN": "sse-token-1"},
        "no member accepted"),
    "sse member without its secret": (
        ["sse_fanout.py", "--config", "node.toml", "--port", "0"], {},
        "LAZILY_TEST_UNSET_SECRET"),
    "job api member without its secret": (
        ["job_api.py", "--config", "node.toml", "--port", "0"], {}, "LAZILY_TEST_UNSET_SECRET"),
    "cluster in code without an id": (
        ["cluster_in_code.py"], {"APP_CLUSTER_SECRET": "s"}, "1, 2 or 3"),
    "cluster in code with a wrong id": (
        ["cluster_in_code.py", "x"], {"APP_CLUSTER_SECRET": "s"}, "1, 2 or 3"),
    "cluster in code without the secret": (
        ["cluster_in_code.py", "1"], {}, "export APP_CLUSTER_SECRET"),
    "clients with a short token": (
        ["clients.py"], {"APP_CLUSTER_SECRET": "s", "APP_WEB_TOKEN": "short"},
        "at least 8 bytes"),
    "broker worker with an unknown scheme": (
        ["broker_worker.py", "foo://x"], {}, "cannot connect to 'foo://x'"),
}


@pytest.mark.parametrize("case", CASES)
def test_an_example_started_wrong_says_why_in_one_line(case: str, tmp_path: Path) -> None:
    args, variables, expected = CASES[case]
    (tmp_path / "node.toml").write_text(SECRET_UNSET)
    env = {k: v for k, v in os.environ.items()
           if k not in {"PRODUCER_TOKEN", "SSE_TOKEN", "APP_CLUSTER_SECRET", "APP_WEB_TOKEN",
                        "LAZILY_TEST_UNSET_SECRET"}}
    env.update(variables)
    script, *rest = args
    out = subprocess.run([sys.executable, str(EXAMPLES / script), *rest], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode not in (0, None), out.stderr
    assert "Traceback" not in out.stderr, out.stderr
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith(f"{script}: ") and expected in last, out.stderr
