"""An admin command given a node's configuration without an admin token says that the
node serves no admin API and how to turn it on, whatever LAZILY_ADMIN_TOKEN holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from lazily_queue.cli import main


@pytest.mark.parametrize("variable", [None, "a-token-of-sixteen-chars"])
@pytest.mark.parametrize("command", [("members", "list"), ("queue", "list"),
                                     ("dlq", "list", "jobs")])
def test_a_config_without_an_admin_token_says_the_admin_api_is_off(
    tmp_path: Path, command: tuple[str, ...], variable: str | None,
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    if variable is None:
        monkeypatch.delenv("LAZILY_ADMIN_TOKEN", raising=False)
    else:
        monkeypatch.setenv("LAZILY_ADMIN_TOKEN", variable)
    config = tmp_path / "n1.toml"
    config.write_text('id = 1\ndata_dir = "d"\nlisten = "tcp://127.0.0.1:7001"\n'
                      'secret_env = "S"\nhttp = "127.0.0.1:1"\n')
    assert main([*command, "--config", str(config)]) == 2
    assert capsys.readouterr().err == (
        f"error: {config} sets no admin_token_env or admin_token_file, so its node serves no "
        "admin API; add one (a token of 16+ characters, not the secret) and restart the node\n")
