"""The status page of a follower, asked for what only the leader does: it says where the
leader is and links to the leader's page (the action is made there, under that page's
own admin session). Headless Chromium over three in-process node services."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lazily_queue.service import NodeService
from tests.transports.transport_helpers import eventually

from .browser import browser, chromium
from .test_status_page_browser import cluster

ADMIN_TOKEN = "page-admin-token-0123456789"


def _term(services: list[NodeService]) -> int:
    return max(s.node.driver.replica.engine.term for s in services if s.node is not None)


async def _ask_a_follower(services: list[NodeService], profile: Path) -> None:
    """A transfer asked on a follower's page is answered not_leader, linking the leader's
    page."""
    follower = next(s for s in services if s.node and not s.node.is_leader)
    assert follower.node is not None and follower.http_url is not None
    leader_id = follower.node.leader_id
    leader = next(s for s in services if s.node and s.node.node_id == leader_id)
    async with browser(follower.http_url + "/?interval=250", profile) as page:
        await page.wait_for(f"document.getElementById('leader').textContent === "
                            f"{json.dumps(leader_id)}")  # the page's script runs
        await page.evaluate(f"document.getElementById('admin-token').value = "
                            f"{json.dumps(ADMIN_TOKEN)}; "
                            "document.getElementById('login').click()")
        await page.wait_for("document.body.classList.contains('admin')")
        await page.wait_for("document.getElementById('member-select').options.length === 3")
        await page.evaluate(
            f"document.getElementById('member-select').value = "
            f"{json.dumps(follower.node.node_id)}; "
            "document.getElementById('member-transfer').click(); "
            "document.getElementById('member-transfer').click()")  # and confirm
        said = await page.wait_for(
            "document.getElementById('admin-result').textContent.startsWith('not_leader')"
            " && document.getElementById('admin-result').textContent")
        assert f"node {leader_id} leads: ask it" in said
        link = await page.wait_for(
            "document.getElementById('leader-page') && [document.getElementById("
            "'leader-page').href, document.getElementById('leader-page').textContent]")
        assert link[0].rstrip("/") == leader.http_url
        assert link[1] == f"open the leader's page (node {leader_id}) to do it there"


async def test_a_not_leader_answer_links_to_the_leaders_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chromium()  # skip before starting anything when there is no browser
    monkeypatch.setenv("LAZILY_PAGE_ADMIN", ADMIN_TOKEN)
    async with cluster(tmp_path, monkeypatch, admin_token_env="LAZILY_PAGE_ADMIN") as services:
        # Three members on one starved process can lose their leader (no heartbeat within
        # the fallback timeout): the page then rightly shows another. Asked again then,
        # on a follower of the new term; a failure within one term fails the test.
        for attempt in range(3):
            term = _term(services)
            try:
                await _ask_a_follower(services, tmp_path / f"profile-{attempt}")
                return
            except (AssertionError, TimeoutError):
                if _term(services) == term or attempt == 2:
                    raise
                await eventually(lambda: all(s.node is not None and s.node.leader_id
                                             for s in services), timeout=20)
