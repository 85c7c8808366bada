"""Reading a secret or a token from a file: bounded, so a wrong path (a device, a log,
a disk image) is refused in one line instead of filling memory or never ending."""

from __future__ import annotations

import os
from pathlib import Path

#: The most a secret or token file may hold (bytes).
MAX_CREDENTIAL_BYTES = 64 * 1024


class CredentialFileError(ValueError):
    """The file could not be read as a credential; the message says why (not which)."""


def read_credential(path: str | os.PathLike[str]) -> bytes:
    """The file's bytes, stripped of surrounding white space."""
    try:
        with Path(path).open("rb") as fh:
            data = fh.read(MAX_CREDENTIAL_BYTES + 1)
    except OSError as exc:
        raise CredentialFileError(str(exc.strerror or exc)) from None
    except ValueError:  # the only one open() raises for a str path
        raise CredentialFileError("its name holds a NUL character (\\u0000)") from None
    if len(data) > MAX_CREDENTIAL_BYTES:
        raise CredentialFileError(f"it holds more than {MAX_CREDENTIAL_BYTES // 1024} KiB; a "
                                  "secret or token file holds the secret alone")
    return data.strip()


def read_credential_text(path: str | os.PathLike[str]) -> str:
    """:func:`read_credential` as UTF-8 text."""
    data = read_credential(path)
    try:
        return data.decode()
    except UnicodeDecodeError as exc:
        raise CredentialFileError(f"it is not UTF-8 text ({exc.reason} at byte "
                                  f"{exc.start})") from None
