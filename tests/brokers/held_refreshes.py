"""Hold a broker storage's refreshes, so that only its operations can notice a change."""

from __future__ import annotations

import asyncio
from typing import Any


def hold_refreshes(storage: Any) -> asyncio.Event:
    """Make every refresh of ``storage`` wait until the returned event is set."""
    go_on = asyncio.Event()
    read = storage._read

    async def held_read() -> None:
        await go_on.wait()
        await read()

    storage._read = held_read
    return go_on
