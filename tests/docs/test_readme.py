"""The README runs as written: every code block is a complete program, a file the next
blocks use, a marked fragment of a file in the repository, or a usage synopsis.

How each block is taken (by its language and first line):

- ``python``: ``# fragment of PATH`` -> every line is in that file; ``# NAME.py: ...``
  -> a file (``myapp.py`` must be ``examples/cluster/myapp.py``; ``api.py``,
  ``chat.py`` are called with an HTTP client; ``test_*.py`` runs under pytest);
  anything else runs as a program and must exit 0. Every one of them but the fragments
  also passes ``mypy --strict`` (``test_readme_types.py``, ``make lint``).
- ``toml``: ``# fragment of PATH`` -> every line is in that file; ``# nodeN.toml``
  must be the file in ``examples/cluster/``; every other TOML block must load as a node
  configuration.
- ``sh``: ``# usage`` -> each option is in the command's ``--help``; ``make`` lines
  must be targets (``make -n``); ``pip install`` lines must name extras that exist;
  anything else runs with bash in a copy of the repository, ``lazily-queue`` on PATH.
"""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import httpx
import pytest
from aiohttp.test_utils import TestClient, TestServer

from build_support.readme_types import Block
from build_support.readme_types import blocks as readme_blocks
from lazily_queue.config import load_config

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
BIN = Path(sys.executable).parent
#: Generous bounds that only a hang reaches (not timing assertions).
HANG = 180


def _deep(levels: int = 50) -> list[object]:
    """A JSON value nested deeper than the value model takes (45 levels)."""
    value: list[object] = []
    for _ in range(levels):
        value = [value]
    return value


def blocks() -> list[Block]:
    return readme_blocks(README.read_text())


def by_lang(lang: str) -> list[Block]:
    return [b for b in blocks() if b.lang == lang]


def ids(items: list[Block]) -> list[str]:
    return [f"line{b.line}" for b in items]


def named(name: str) -> Block:
    return next(b for b in blocks() if b.file_name == name)


def env() -> dict[str, str]:
    return dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}",
                PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "transports")]))


def test_every_block_is_of_a_known_kind() -> None:
    kinds = {b.lang for b in blocks()}
    assert kinds <= {"python", "sh", "toml"}, kinds
    assert all(b.lang for b in blocks()), "a code block without a language"


def test_the_readme_names_nothing_outside_the_repository() -> None:
    text = README.read_text()
    assert "../" not in text
    for link in re.findall(r"\]\((?!#|https?://)([^)]+)\)", text):
        assert (ROOT / link).exists(), link
    for path in re.findall(r"`((?:examples|docs|fixtures|benchmarks|tests)/[\w./*-]+)`", text):
        if "*" in path or re.search(r"[A-Z]{2,}", path):  # a pattern or a placeholder
            assert list(ROOT.glob(re.sub(r"[A-Z]{2,}", "*", path))), path
            continue
        assert (ROOT / path.rstrip("/")).exists(), path


def test_the_security_model_names_every_handshake_feature() -> None:
    from lazily_transports import READY_FEATURE

    from lazily_queue.raft.features import OPTIONAL_FEATURES, REQUIRED_FEATURES

    section = README.read_text().split("\n## Security model\n")[1].split("\n## ")[0]
    named = set(re.findall(r"`([a-z]+(?:-[a-z]+)*-v\d+)`", section))
    assert named == REQUIRED_FEATURES | OPTIONAL_FEATURES | {READY_FEATURE}


def test_the_capability_table_names_every_flag() -> None:
    from dataclasses import fields

    from lazily_queue.storage import StorageCapabilities

    text = README.read_text()
    table = text[text.index("| flag | meaning |"):].split("\n\n")[0]
    flags = re.findall(r"^\| `(\w+)` \|", table, re.M)
    assert sorted(flags) == sorted(f.name for f in fields(StorageCapabilities))


def test_the_two_set_up_commands_come_first() -> None:
    first = by_lang("sh")[0].body.splitlines()
    assert [line.split()[:2] for line in first] == [["make", "demo"], ["make", "test"]]
    assert re.findall(r"^## (.+)$", README.read_text(), re.M)[0] == "Quick start"


# -- python ---------------------------------------------------------------------------------

PROGRAMS = [b for b in by_lang("python") if not b.is_fragment and b.file_name is None]


@pytest.mark.slow
@pytest.mark.parametrize("block", PROGRAMS, ids=ids(PROGRAMS))
def test_python_programs_run(block: Block, tmp_path: Path) -> None:
    program = tmp_path / "program.py"
    program.write_text(block.body)
    # A program keeping a data directory runs again as a user reruns it: on what it left.
    for _ in range(2 if re.search(r'data_dir\s*=\s*"', block.body) else 1):
        out = subprocess.run([sys.executable, str(program)], cwd=tmp_path, env=env(),
                             capture_output=True, text=True, timeout=HANG)
        assert out.returncode == 0, f"README line {block.line}:\n{out.stdout}\n{out.stderr}"


FRAGMENTS = [b for b in blocks() if b.is_fragment]


@pytest.mark.parametrize("block", FRAGMENTS, ids=ids(FRAGMENTS))
def test_fragments_are_in_their_file(block: Block) -> None:
    source = ROOT / block.first.removeprefix("# fragment of ").strip()
    lines = {line.strip() for line in source.read_text().splitlines()}
    for line in block.body.splitlines()[1:]:
        assert line.strip() in lines, f"README line {block.line}: {line!r} not in {source}"


def test_the_file_blocks_are_the_example_files() -> None:
    cluster = ROOT / "examples" / "cluster"
    assert named("myapp.py").body == (cluster / "myapp.py").read_text()
    node1 = named("node1.toml").body
    assert node1 == (cluster / "node1.toml").read_text()
    for n in (2, 3):  # "differ only in id, data_dir, listen and http"
        other = (cluster / f"node{n}.toml").read_text()
        expected = (node1.replace("node1.toml", f"node{n}.toml")
                    .replace("id = 1", f"id = {n}").replace('"data/1"', f'"data/{n}"')
                    .replace('listen = "tcp://127.0.0.1:7101"',
                             f'listen = "tcp://127.0.0.1:710{n}"')
                    .replace("127.0.0.1:8101", f"127.0.0.1:810{n}"))
        assert other == expected


TOML = [b for b in by_lang("toml") if not b.is_fragment]


@pytest.mark.parametrize("block", TOML, ids=ids(TOML))
def test_toml_blocks_are_valid_node_configurations(block: Block, tmp_path: Path) -> None:
    path = tmp_path / (block.file_name or "node.toml")
    path.write_text(block.body)
    config = load_config(path)
    assert config.cluster == "orders" and config.node_id == 1


def _module(block: Block, directory: Path) -> ModuleType:
    assert block.file_name is not None
    path = directory / block.file_name
    path.write_text(block.body)
    spec = importlib.util.spec_from_file_location(f"readme_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_the_fastapi_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # its node listens on a relative socket path
    api = _module(named("api.py"), tmp_path)
    async with api.app.router.lifespan_context(api.app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=api.app), base_url="http://api") as client:
        response = await client.post("/jobs", json={"resize": "cat.png"})
        assert response.status_code == 202 and response.json() == {"job": 0}
        refused = await client.post("/jobs", json={"deep": _deep()})
        assert refused.status_code == 422 and "nesting too deep" in refused.text
        assert (await client.get("/jobs")).json() == {"pending": 1, "in_flight": 0}
        metrics = await client.get("/metrics")
        assert 'lazily_queue_work_pending{name="jobs"} 1.0' in metrics.text
        assert (await client.get("/cluster/status.json")).json()["node"] == "1"


async def test_the_aiohttp_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    chat = _module(named("chat.py"), tmp_path)
    async with TestClient(TestServer(chat.create_app())) as client:
        node = client.app[chat.NODE]
        waiting = asyncio.ensure_future(client.get("/messages/ann/next"))
        async with asyncio.timeout(HANG):  # a hang detector
            while "ann" not in node.topic("chat").subscriptions():
                await node.driver.next_step()
        refused = await client.post("/messages", data=b"not json")
        assert refused.status == 400 and "JSON" in await refused.text()
        refused = await client.post("/messages", json={"deep": _deep()})
        assert refused.status == 400 and "nesting too deep" in await refused.text()
        posted = await client.post("/messages", json={"text": "hi"})
        assert posted.status == 201 and await posted.json() == {"offset": 0}
        answer = await asyncio.wait_for(waiting, HANG)
        assert answer.status == 200 and await answer.json() == {"text": "hi"}
        assert (await client.get("/cluster/status.json")).status == 200


@pytest.mark.slow
def test_the_testing_module_passes_under_pytest(tmp_path: Path) -> None:
    (tmp_path / "test_orders.py").write_text(named("test_orders.py").body)
    out = subprocess.run(  # as written: no asyncio_mode in a configuration
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_orders.py"],
        cwd=tmp_path, env=env(), capture_output=True, text=True, timeout=HANG)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "2 passed" in out.stdout


@pytest.mark.slow
def test_the_cluster_in_code_example_serves_until_stopped(tmp_path: Path) -> None:
    secret = dict(env(), APP_CLUSTER_SECRET="s3cret")
    procs = [subprocess.Popen([sys.executable, str(ROOT / "examples" / "cluster_in_code.py"),
                               str(n)], cwd=tmp_path, env=secret, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for n in (1, 2, 3)]
    try:
        lines = [p.stdout.readline() for p in procs if p.stdout is not None]
        leaders = {re.search(r"the leader is node (\d)", line).group(1)  # type: ignore[union-attr]
                   for line in lines}
        assert len(leaders) == 1, lines
    finally:
        for p in procs:
            p.terminate()
        codes = [p.wait(HANG) for p in procs]
    assert codes == [0, 0, 0], [p.stderr.read() for p in procs if p.stderr is not None]


# -- shell ------------------------------------------------------------------------------------

SHELL = by_lang("sh")


def _kind(block: Block) -> str:
    lines = [line for line in block.body.splitlines() if line.strip()]
    if block.first == "# usage":
        return "usage"
    if all(line.startswith("make ") for line in lines):
        return "make"
    if all(line.startswith("pip install ") for line in lines):
        return "pip"
    return "run"


def _commands(block: Block) -> list[str]:
    return [line.split("#")[0].strip() for line in block.body.splitlines()
            if line.strip() and not line.startswith("#")]


@pytest.mark.parametrize("block", [b for b in SHELL if _kind(b) == "make"],
                         ids=ids([b for b in SHELL if _kind(b) == "make"]))
def test_make_lines_name_targets(block: Block) -> None:
    for command in _commands(block):
        out = subprocess.run([*command.split(), "-n"], cwd=ROOT, capture_output=True,
                             text=True, timeout=HANG)
        assert out.returncode == 0, out.stderr


@pytest.mark.parametrize("block", [b for b in SHELL if _kind(b) == "pip"],
                         ids=ids([b for b in SHELL if _kind(b) == "pip"]))
def test_pip_lines_name_existing_extras(block: Block) -> None:
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"])
    for command in _commands(block):
        for group in re.findall(r"\[([\w,]+)\]", command):
            assert set(group.split(",")) <= extras, command
    for named_extra in re.findall(r"'\.\[(\w+)\]'", block.body):
        assert named_extra in extras


def test_pip_installs_from_the_clone() -> None:
    """The package is used from a clone (no index has it): every ``pip install`` the
    README shows, in a block or in prose, installs the checkout."""
    for command in re.findall(r"pip install [^`\n#]+", README.read_text()):
        words = command.split()
        assert words[2] == "-e" and words[3].strip("'").startswith("."), command


@pytest.mark.parametrize("block", [b for b in SHELL if _kind(b) == "usage"],
                         ids=ids([b for b in SHELL if _kind(b) == "usage"]))
def test_usage_lines_match_the_help(block: Block) -> None:
    for command in _commands(block):
        words = command.split()
        assert words[0] == "lazily-queue"
        text = _help(words[1])
        for option in re.findall(r"--[\w-]+", command):
            assert option in text, (option, command)


@functools.cache
def _help(subcommand: str) -> str:
    """``lazily-queue SUBCOMMAND --help`` (asked once per test process)."""
    out = subprocess.run([str(BIN / "lazily-queue"), subcommand, "--help"],
                         capture_output=True, text=True, timeout=HANG)
    assert out.returncode == 0, out.stderr
    return out.stdout


RUN = [b for b in SHELL if _kind(b) == "run"]


@pytest.mark.slow
@pytest.mark.parametrize("block", RUN, ids=ids(RUN))
def test_shell_blocks_run_in_a_clone(block: Block, tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    shutil.copytree(ROOT, clone, ignore=shutil.ignore_patterns(
        ".venv", ".git", "__pycache__", "*.egg-info", ".mypy_cache", ".ruff_cache", "data"))
    with subprocess.Popen(["bash", "-e", "-c", block.body], cwd=clone, env=env(),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          start_new_session=True) as proc:
        try:
            stdout, stderr = proc.communicate(timeout=HANG)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the nodes it started in the background too
            stdout, stderr = proc.communicate()
            pytest.fail(f"README line {block.line} hung for {HANG} s:\n{stdout}\n{stderr}")
    out = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    assert out.returncode == 0, f"README line {block.line}:\n{out.stdout}\n{out.stderr}"
    if "lazily-queue node" in block.body:  # the walkthrough: the workers did the jobs
        for n in range(6):
            assert f"resized cat-{n}.png to 640px" in out.stdout, out.stdout
        assert "node 1 of cluster 'orders'" in out.stdout
