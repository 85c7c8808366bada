"""Files read whole (configurations, fixtures, secrets, tokens): bounded, so a wrong
path (a device, a log, a disk image, a pipe nobody writes to) is refused in one line
instead of filling memory or never ending."""

from __future__ import annotations

import os

#: The most a secret or token file may hold (bytes).
MAX_CREDENTIAL_BYTES = 64 * 1024


class CredentialFileError(ValueError):
    """The file could not be read as a credential; the message says why (not which)."""


def read_bounded(path: str | os.PathLike[str], limit: int) -> bytes:
    """At most ``limit + 1`` bytes of the file (more than ``limit``: it is too long). A
    named pipe without a writer reads as empty instead of blocking the open."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as fh:
        os.set_blocking(fd, True)
        return fh.read(limit + 1)


def read_credential(path: str | os.PathLike[str]) -> bytes:
    """The file's bytes, stripped of surrounding white space."""
    try:
        data = read_bounded(path, MAX_CREDENTIAL_BYTES)
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
