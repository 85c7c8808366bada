"""OutermostBlock: ``async with`` blocks on an object that runs (a node, a cluster
client), of which only the outermost ends it."""

from __future__ import annotations

from typing import Self


class OutermostBlock:
    """``async with obj:`` starts ``obj`` (when it is not running) and ends it when the
    outermost of the blocks open on it ends: a block nested in another one, say a request
    handler's in an app whose lifespan runs the node, leaves it running."""

    _blocks = 0

    async def _begin_block(self) -> None:
        """Start the object (a no-op while it runs)."""
        raise NotImplementedError

    async def _end_blocks(self) -> None:
        """End the object: the outermost block ended."""
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        await self._begin_block()
        self._blocks += 1
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._blocks -= 1
        if self._blocks == 0:
            await self._end_blocks()
