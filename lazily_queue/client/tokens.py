"""A client token read from where a grant or a client says it is: at least 8 bytes,
surrounding whitespace dropped."""

from __future__ import annotations

import os

from ..errors import InvalidConfiguration, shown_path
from ..small_files import CredentialFileError, read_credential


def token_bytes(token: bytes | str, what: str) -> bytes:
    data = token.encode() if isinstance(token, str) else token
    if not isinstance(data, bytes) or len(data.strip()) < 8:
        raise InvalidConfiguration(f"{what}: a token must have at least 8 bytes")
    return data.strip()


def token_from_env(variable: str, what: str) -> bytes:
    value = os.environ.get(variable)
    if not value:
        raise InvalidConfiguration(
            f"{what}: environment variable {variable} is not set or empty; export the "
            "client's token there"
        )
    return token_bytes(value, what)


def token_from_file(path: str | os.PathLike[str], what: str) -> bytes:
    try:
        data = read_credential(path)
    except CredentialFileError as exc:
        raise InvalidConfiguration(
            f"{what}: cannot read the token file {shown_path(path)}: {exc}"
        ) from None
    return token_bytes(data, what)
