"""A planted defect (:class:`Mutation`) and the test files several of them name."""

from __future__ import annotations

from dataclasses import dataclass

DISK = "tests/raft/test_disk_errors.py"
HOSTILE = "tests/integrations/test_admin_hostile.py"
BOUNDS = "tests/integrations/test_status_bounds.py"
NAMES = "tests/client/test_object_limits.py"
SUBS = "tests/client/test_subscriber_limits.py"
FORGETS = "tests/testing/test_remove_member_forgets.py"
SUBDEL_OPS = "tests/replicated/test_subscriber_delete_ops.py"
SUBDEL_CELL = "tests/cells/test_topic_subscriber_delete.py"
SUBDEL_ADMIN = "tests/integrations/test_admin_subscribers.py"
LISTING = "tests/integrations/test_subscriber_listing.py"
PAGE_SUBS = ("tests/integrations/test_status_page_subscribers.py::"
              "test_page_finds_and_deletes_a_subscriber_the_status_does_not_list")


@dataclass(frozen=True)
class Mutation:
    """Replace ``old`` (found exactly once in ``path``) by ``new``; ``tests`` must then
    fail; ``guards`` says which guarantee the defect would break."""

    name: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]
    guards: str
