"""The transport tables of a node configuration: ``[tls]`` and ``[webrtc]``.

::

    [tls]                               # for tls:// and wss:// addresses
    certificate = "certs/n1.pem"        # this node's certificate chain (PEM)
    key = "certs/n1.key"                # its private key (PEM, unencrypted)
    ca = "certs/ca.pem"                 # the CA every member's certificate is signed by
    check_hostname = true               # a peer's certificate must name the address dialed
    require_client_certificate = true   # listeners ask dialers for a certificate (with ca)

    [webrtc]                            # for webrtc+ws:// and webrtc+wss:// addresses
    signaling_token_env = "Q_SIGNALING" # the signaling server's token (`--token-env`)
    [[webrtc.ice_servers]]              # STUN/TURN servers, none by default
    urls = ["stun:stun.example.org:3478"]
    [[webrtc.ice_servers]]
    urls = ["turn:turn.example.org:3478?transport=udp"]
    username = "edge"
    credential_env = "Q_TURN_PASSWORD"  # the TURN password, from this variable

Relative paths are relative to the configuration file; every mistake names the key.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from difflib import get_close_matches
from pathlib import Path
from typing import Any

from lazily_transports import TLS_SCHEMES, TLSConfigError, TLSFiles, scheme_of

from .errors import shown, shown_path
from .small_files import CredentialFileError, read_credential_text

Fail = Callable[[str], Exception]
_TLS_KEYS = frozenset({"certificate", "key", "ca", "check_hostname",
                       "require_client_certificate"})
_WEBRTC_KEYS = frozenset({"signaling_token_env", "signaling_token_file", "ice_servers"})
_ICE_KEYS = frozenset({"urls", "username", "credential_env", "credential_file"})


@dataclass(frozen=True)
class IceServerConfig:
    """One STUN or TURN server; the TURN credential comes from a variable or a file."""

    urls: tuple[str, ...]
    username: str | None = None
    credential_env: str | None = None
    credential_file: Path | None = None


@dataclass(frozen=True)
class WebRTCConfig:
    """ICE servers and the signaling token source of a node."""

    ice_servers: tuple[IceServerConfig, ...] = ()
    signaling_token_env: str | None = None
    signaling_token_file: Path | None = None


#: How alike an unknown key and a known one are (difflib's ratio) for the message to
#: name the known one as what was meant: ``data_dirr`` and ``peer`` are, ``colour`` and
#: ``cluster`` are not.
CLOSE = 0.75


def refuse_unknown_keys(table: dict[str, Any], known: frozenset[str] | set[str], where: str,
                        fail: Fail) -> None:
    """Fail naming every key of ``table`` not in ``known`` (``where``: the table, or
    ``""`` for the top level), the known key each is likely a misspelling of, and the
    known ones."""
    unknown = sorted(set(table) - known)
    if unknown:
        prefix = f"{where}: " if where else ""
        named = ", ".join(
            (key if key.isidentifier() else shown(key))
            + (f" (did you mean {close[0]}?)"
               if (close := get_close_matches(key, sorted(known), n=1, cutoff=CLOSE))
               else "")
            for key in unknown)
        raise fail(f"{prefix}unknown key(s) {named}; the known keys are "
                   f"{', '.join(sorted(known))}")


def parse_tls(raw: Any, base: Path, fail: Fail) -> TLSFiles | None:
    """The ``[tls]`` table as :class:`~lazily_transports.TLSFiles` (files checked)."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise fail("[tls] must be a table with `certificate`, `key` and `ca`")
    refuse_unknown_keys(raw, _TLS_KEYS, "[tls]", fail)
    for key in ("certificate", "key"):
        if not isinstance(raw.get(key), str) or not raw[key]:
            raise fail(f"[tls] `{key}` is required (a PEM file path)")
    if "ca" in raw and (not isinstance(raw["ca"], str) or not raw["ca"]):
        raise fail("[tls] `ca` must be a PEM file path")
    flags = {}
    for key in ("check_hostname", "require_client_certificate"):
        if key in raw:
            if not isinstance(raw[key], bool):
                raise fail(f"[tls] `{key}` must be true or false, not {shown(raw[key])}")
            flags[key] = raw[key]
    tls = TLSFiles(base / raw["certificate"], base / raw["key"],
                   None if "ca" not in raw else base / raw["ca"], **flags)
    try:
        tls.server_context()
        tls.client_context()
    except TLSConfigError as exc:
        raise fail(f"[tls]: {exc}") from None
    return tls


def check_tls_addresses(tls: TLSFiles | None, addresses: dict[str, str], fail: Fail) -> None:
    """``tls://`` and ``wss://`` need ``[tls]``; with it, every address must use TLS."""
    for what, address in addresses.items():
        scheme = scheme_of(address)
        if tls is None and scheme in ("tls", "wss"):
            raise fail(f"{what} address {shown(address)} uses TLS: add a [tls] table with this "
                       "node's `certificate`, `key` and the members' `ca`")
        if tls is not None and scheme not in TLS_SCHEMES:
            raise fail(f"{what} address {shown(address)} does not use TLS but [tls] is set: use "
                       "tls://, wss:// or webrtc+wss:// for every member")


def _name(value: Any, what: str, fail: Fail) -> str:
    if not isinstance(value, str) or not value:
        raise fail(f"{what} must be a non-empty string, not {shown(value)}")
    return value


def parse_webrtc(raw: Any, base: Path, fail: Fail) -> WebRTCConfig | None:
    """The ``[webrtc]`` table."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise fail("[webrtc] must be a table")
    refuse_unknown_keys(raw, _WEBRTC_KEYS, "[webrtc]", fail)
    if "signaling_token_env" in raw and "signaling_token_file" in raw:
        raise fail("[webrtc]: give at most one of `signaling_token_env` and "
                   "`signaling_token_file`")
    servers = []
    entries = raw.get("ice_servers", [])
    if not isinstance(entries, list):
        raise fail("[webrtc] `ice_servers` must be an array of tables ([[webrtc.ice_servers]])")
    for i, entry in enumerate(entries):
        where = f"[webrtc] ice_servers[{i}]"
        if not isinstance(entry, dict) or set(entry) - _ICE_KEYS:
            raise fail(f"{where} takes only {', '.join(sorted(_ICE_KEYS))}")
        urls = entry.get("urls")
        urls = [urls] if isinstance(urls, str) else urls
        if not isinstance(urls, list) or not urls or not all(
                isinstance(u, str) and u.split(":", 1)[0] in ("stun", "stuns", "turn", "turns")
                for u in urls):
            raise fail(f"{where} `urls` must list stun:, stuns:, turn: or turns: URLs, "
                       f"not {shown(entry.get('urls'))}")
        if "credential_env" in entry and "credential_file" in entry:
            raise fail(f"{where}: give at most one of `credential_env` and `credential_file`")
        is_turn = any(u.startswith("turn") for u in urls)
        has_credential = "credential_env" in entry or "credential_file" in entry
        if is_turn and ("username" not in entry or not has_credential):
            raise fail(f"{where}: a TURN server needs `username` and `credential_env` (or "
                       "`credential_file`); credentials are never written in the file")
        servers.append(IceServerConfig(
            tuple(urls),
            None if "username" not in entry else _name(entry["username"], f"{where} username",
                                                        fail),
            None if "credential_env" not in entry else _name(
                entry["credential_env"], f"{where} credential_env", fail),
            None if "credential_file" not in entry else base / _name(
                entry["credential_file"], f"{where} credential_file", fail),
        ))
    token_file = raw.get("signaling_token_file")
    return WebRTCConfig(
        tuple(servers),
        None if "signaling_token_env" not in raw else _name(
            raw["signaling_token_env"], "[webrtc] signaling_token_env", fail),
        None if token_file is None else base / _name(token_file,
                                                     "[webrtc] signaling_token_file", fail),
    )


def read_secret(env: str | None, file: Path | None, what: str, fail: Fail) -> str | None:
    """A credential from an environment variable or a file (``None`` when neither)."""
    if env is not None:
        value = os.environ.get(env, "")
        if not value:
            raise fail(f"{what}: environment variable {env} is not set or empty")
        return value
    if file is not None:
        try:
            value = read_credential_text(file)
        except CredentialFileError as exc:
            raise fail(f"{what}: cannot read {shown_path(file)}: {exc}") from None
        if not value:
            raise fail(f"{what}: {shown_path(file)} is empty")
        return value
    return None


def webrtc_options(webrtc: WebRTCConfig, source: str) -> dict[str, Any]:
    """``ice_servers`` and ``signaling_token`` for :class:`~lazily_queue.node.Node`, with
    the credentials read now (a missing one raises ``ConfigError`` naming the key)."""
    from .config import ConfigError

    def fail(message: str) -> ConfigError:
        return ConfigError(f"{source}: {message}")

    servers = []
    for i, server in enumerate(webrtc.ice_servers):
        entry: dict[str, Any] = {"urls": list(server.urls)}
        if server.username is not None:
            entry["username"] = server.username
        credential = read_secret(server.credential_env, server.credential_file,
                                 f"[webrtc] ice_servers[{i}] credential", fail)
        if credential is not None:
            entry["credential"] = credential
        servers.append(entry)
    token = read_secret(webrtc.signaling_token_env, webrtc.signaling_token_file,
                        "[webrtc] signaling token", fail)
    return {"ice_servers": servers, "signaling_token": token}
