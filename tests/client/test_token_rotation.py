"""A client's token replaced without a gap: a grant accepts its token and its previous
token, from Python and from a node's TOML; every mistake is refused with the key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lazily_queue import AccessDenied, ClientAccess, ClientGrant, Node, connect
from lazily_queue.config import ConfigError, parse_config
from lazily_queue.errors import InvalidConfiguration

pytestmark = pytest.mark.timeout(60)

NEW, OLD = b"the-new-token-of-web", b"the-old-token-of-web"
BASE = {"id": 1, "data_dir": "data", "listen": "unix:n1.sock", "secret_env": "S"}


async def test_a_client_links_with_the_token_or_the_previous_one(short_tmp: Path) -> None:
    grant = ClientGrant("web", NEW, produce=["jobs"], previous_token=OLD)
    assert "the-" not in repr(grant) and "previous_token=..." in repr(grant)
    node = Node(1, data_dir=None, durability="none", listen=f"unix://{short_tmp}/n1.sock",
                secret=b"the-cluster-secret", clients=ClientAccess([grant]))
    async with node:
        await node.wait_for_leader()
        assert node.listen is not None
        for token in (OLD, NEW):
            async with connect(node.listen, ("web", token)) as client:
                await client.queue("jobs").push(token.decode())
        with pytest.raises(AccessDenied, match="wrong token"):
            await connect(node.listen, ("web", b"a-third-token-of-web"),
                          connect_timeout=2).start()
        await node.barrier()
        assert node.view.queue("jobs").elements() == [  # type: ignore[union-attr]
            OLD.decode(), NEW.decode()]
        assert node.status()["clients"]["previous_token_links"] == {"web": 1}


def test_two_clients_sharing_a_token_are_refused() -> None:
    web = ClientGrant("web", NEW, produce=["jobs"], previous_token=OLD)
    for other in (ClientGrant("billing", OLD, admin=["*"]),
                  ClientGrant("billing", b"billing-token", admin=["*"], previous_token=NEW)):
        with pytest.raises(InvalidConfiguration,
                           match="clients 'web' and 'billing' share a token"):
            ClientAccess([web, other])
    ClientAccess([web, ClientGrant("billing", b"billing-token", previous_token=b"old-billing")])


@pytest.mark.parametrize(("grant", "error"), [
    ({"previous_token": NEW}, "previous_token is its token"),
    ({"previous_token": b"short"}, "previous_token: a token must have at least 8 bytes"),
    ({"token": None, "certificate_subject": "CN=web", "previous_token": OLD},
     "previous_token goes with a token, not a certificate"),
])
def test_a_grant_refuses_a_previous_token_that_cannot_be_one(
    grant: dict[str, Any], error: str,
) -> None:
    with pytest.raises(InvalidConfiguration, match=error):
        ClientGrant("web", **{"token": NEW, **grant})


def test_the_toml_names_where_the_previous_token_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("WEB", NEW.decode())
    monkeypatch.setenv("WEB_OLD", OLD.decode())
    (tmp_path / "web.old").write_bytes(OLD + b"\n")
    for where in ({"previous_token_env": "WEB_OLD"}, {"previous_token_file": "web.old"}):
        doc = BASE | {"client": [{"name": "web", "token_env": "WEB", **where}]}
        access = parse_config(doc, base=tmp_path, source="n1.toml").client_access()
        assert access is not None
        assert access.credential("web") == (NEW, OLD)
    monkeypatch.setenv("WEB_OLD", NEW.decode())
    doc = BASE | {"client": [{"name": "web", "token_env": "WEB", "previous_token_env": "WEB_OLD"}]}
    with pytest.raises(ConfigError, match="previous_token is its token"):
        parse_config(doc, base=tmp_path, source="n1.toml").client_access()
    monkeypatch.delenv("WEB_OLD")
    with pytest.raises(ConfigError, match=r"'web' previous token: environment variable WEB_OLD "
                                          "is not set"):
        parse_config(doc, base=tmp_path, source="n1.toml").client_access()


@pytest.mark.parametrize(("client", "error"), [
    ({"token_env": "WEB", "previous_token_env": "A", "previous_token_file": "b"},
     "give at most one of `previous_token_env` and `previous_token_file`"),
    ({"certificate_subject": "CN=web", "previous_token_env": "A"},
     "go with a token"),
    ({"token_env": "WEB", "previous_token_env": ""}, "`previous_token_env` must be a non-empty"),
])
def test_a_previous_token_key_out_of_place_is_refused_when_the_file_is_read(
    tmp_path: Path, client: dict[str, Any], error: str,
) -> None:
    doc = BASE | {"client": [{"name": "web", **client}]}
    with pytest.raises(ConfigError, match=error):
        parse_config(doc, base=tmp_path, source="n1.toml")
