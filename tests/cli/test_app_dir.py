"""``[app]`` modules resolve from the configuration file's directory, or ``--app-dir``,
in real ``lazily-queue node`` processes started from another directory."""

from __future__ import annotations

from pathlib import Path

from .node_procs import NodeProc, unix_peers, wait_for, write_config

APP = '''
from lazily_queue import Node


async def main(node: Node, options: dict) -> None:
    await node.wait_for_leader()
    await node.queue("greetings").push(options["greeting"])
'''


def _layout(tmp_path: Path) -> tuple[Path, Path]:
    """A config directory and another working directory (neither on sys.path)."""
    conf, elsewhere = tmp_path / "conf", tmp_path / "elsewhere"
    conf.mkdir()
    elsewhere.mkdir()
    return conf, elsewhere


def _greetings(proc: NodeProc) -> int:
    proc.wait_ready()
    return wait_for(lambda: proc.status()["queues"].get("greetings", {}).get("len"),
                    what="the app's push")  # type: ignore[no-any-return]


def test_the_app_module_beside_the_configuration_file_is_found(tmp_path: Path) -> None:
    conf, elsewhere = _layout(tmp_path)
    (conf / "myapp.py").write_text(APP)
    config = write_config(conf / "n1.toml", 1, unix_peers(tmp_path, (1,)),
                          app='entry = "myapp:main"\ngreeting = "hello"')
    proc = NodeProc(config, cwd=elsewhere)
    try:
        assert _greetings(proc) == 1
    finally:
        assert proc.terminate() == 0, proc.stderr()


def test_app_dir_names_another_directory(tmp_path: Path) -> None:
    conf, elsewhere = _layout(tmp_path)
    apps = tmp_path / "apps"
    (apps / "shop").mkdir(parents=True)
    (apps / "shop" / "__init__.py").write_text("")
    (apps / "shop" / "worker.py").write_text(APP)
    config = write_config(conf / "n1.toml", 1, unix_peers(tmp_path, (1,)),
                          app='entry = "shop.worker:main"\ngreeting = "hi"')
    missing = NodeProc(config, cwd=elsewhere)
    assert missing.wait_exit() == 2
    assert (f"cannot import 'shop.worker' (No module named 'shop'); looked in {conf} "
            "(--app-dir, default the configuration file's directory) and the installed "
            "packages") in missing.stderr()
    proc = NodeProc(config, cwd=elsewhere, args=("--app-dir", "../apps"))
    try:
        assert _greetings(proc) == 1
    finally:
        assert proc.terminate() == 0, proc.stderr()
    wrong = NodeProc(config, cwd=elsewhere, args=("--app-dir", "nowhere"))
    assert wrong.wait_exit() == 2
    assert "--app-dir nowhere: no such directory" in wrong.stderr()


def test_an_app_that_fails_to_import_exits_1_with_its_traceback_and_one_line(
        tmp_path: Path) -> None:
    conf, elsewhere = _layout(tmp_path)
    (conf / "broken.py").write_text('raise RuntimeError("no config for the app")\n')
    (conf / "typo.py").write_text("async def main(node, options:\n")
    (conf / "needs.py").write_text("import a_dependency_not_installed\n")
    for module, cause in (("broken", "RuntimeError: no config for the app"),
                          ("typo", "SyntaxError: "),
                          ("needs", "ModuleNotFoundError: No module named "
                                    "'a_dependency_not_installed'")):
        config = write_config(conf / f"{module}.toml", 1, unix_peers(tmp_path, (1,)),
                              app=f'entry = "{module}:main"')
        proc = NodeProc(config, cwd=elsewhere)
        assert proc.wait_exit() == 1
        err = proc.stderr()
        assert f"ERROR lazily_queue.service: the app {module}:main failed to import" in err
        assert f'File "{conf / module}.py", line 1' in err  # the traceback is logged
        last = err.strip().splitlines()[-1]
        assert last.startswith(f"error: {config}: [app] entry '{module}:main': importing "
                               f"'{module}' raised {cause}"), err
        assert "lazily_queue/cli" not in err, err  # not the command's own traceback


def test_an_app_entry_that_is_not_async_is_refused_before_it_runs(tmp_path: Path) -> None:
    conf, elsewhere = _layout(tmp_path)
    ran = tmp_path / "ran"
    (conf / "sync.py").write_text(
        f"def main(node, options):\n    open({str(ran)!r}, 'w').close()\n")
    config = write_config(conf / "n1.toml", 1, unix_peers(tmp_path, (1,)),
                          app='entry = "sync:main"')
    proc = NodeProc(config, cwd=elsewhere)
    assert proc.wait_exit() == 2
    assert proc.stderr().strip().splitlines()[-1] == (
        f"error: {config}: [app] entry 'sync:main': sync.main is not an async function; "
        "define it as `async def main(node, options)`")
    assert not ran.exists()


def test_an_app_entry_that_cannot_take_the_node_and_options_is_refused(
        tmp_path: Path) -> None:
    conf, elsewhere = _layout(tmp_path)
    (conf / "one.py").write_text("async def main(node):\n    pass\n")
    config = write_config(conf / "n1.toml", 1, unix_peers(tmp_path, (1,)),
                          app='entry = "one:main"')
    proc = NodeProc(config, cwd=elsewhere)
    assert proc.wait_exit() == 2
    err = proc.stderr()
    assert err.strip().splitlines()[-1] == (
        f"error: {config}: [app] entry 'one:main': one.main cannot be called with the node "
        "and the [app] options; define it as `async def main(node, options)`"), err
    assert "Traceback" not in err and "ready node=" not in err
