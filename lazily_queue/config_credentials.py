"""The credentials a node configuration names, read when they are needed (never when
the file is read, so a configuration can be checked where they are not set): the
cluster secret (``secret_env`` or ``secret_file``) and the admin API's token
(``admin_token_env`` or ``admin_token_file``). ``fail`` makes the error to raise from a
message naming the key and the fix (:class:`~lazily_queue.config.ConfigError`, prefixed
with the file)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from .errors import InvalidConfiguration, shown_path
from .small_files import CredentialFileError, read_credential, read_credential_text

Fail = Callable[[str], InvalidConfiguration]


def cluster_secret(secret_env: str | None, secret_file: Path | None, fail: Fail) -> bytes:
    """The cluster secret from environment variable ``secret_env``, else from the file
    ``secret_file``."""
    if secret_env is not None:
        value = os.environ.get(secret_env)
        if not value:
            raise fail(
                f"the cluster secret is missing: environment variable {secret_env} (named "
                "by `secret_env`) is not set or empty; export it with the same value on "
                "every node"
            )
        return value.encode()
    assert secret_file is not None
    try:
        data = read_credential(secret_file)
    except CredentialFileError as exc:
        raise fail(
            f"cannot read the cluster secret from `secret_file` {shown_path(secret_file)}: "
            f"{exc}"
        ) from None
    if not data:
        raise fail(f"`secret_file` {shown_path(secret_file)} is empty")
    return data


def admin_token(token_env: str | None, token_file: Path | None,
                secret: Callable[[], bytes] | None, fail: Fail) -> str | None:
    """The admin API's token from ``token_env`` or ``token_file`` (``None`` without
    either); ``secret``, when given, is the cluster secret it must differ from."""
    from .admin_auth import MIN_TOKEN

    if token_env is not None:
        value = os.environ.get(token_env, "")
        where = f"environment variable {token_env} (named by `admin_token_env`)"
    elif token_file is not None:
        try:
            value = read_credential_text(token_file)
        except CredentialFileError as exc:
            raise fail(
                f"cannot read the admin token from `admin_token_file` "
                f"{shown_path(token_file)}: {exc}"
            ) from None
        where = f"`admin_token_file` {shown_path(token_file)}"
    else:
        return None
    if len(value) < MIN_TOKEN:
        raise fail(
            f"the admin token from {where} is missing or shorter than {MIN_TOKEN} "
            "characters; use a long random value (not the cluster secret)")
    if secret is not None and value.encode() == secret():
        raise fail("the admin token must differ from the cluster secret (the secret must "
                   "never reach a browser)")
    return value
