"""One read buffer per thread for the stream protocols' ``recv_into``.

``asyncio``'s stream transports read a plain protocol's data with ``recv(256 KiB)``,
which allocates that much on every read (9 us for a 200-byte frame in a loop of reads
alone, against under 1 us for ``recv_into`` a buffer already there and the copy). A
:class:`asyncio.BufferedProtocol` is handed a buffer by ``get_buffer`` right before the
read and told what arrived by ``buffer_updated`` right after it, on the same thread with
nothing run between, so every connection of a thread can share one buffer: what
arrived is copied out before the next read can begin.
"""

from __future__ import annotations

import threading

__all__ = ["READ_SIZE", "read_buffer"]

#: What one read may take (asyncio's own ``max_size`` for a plain protocol).
READ_SIZE = 256 * 1024

_local = threading.local()


def read_buffer() -> memoryview:
    """This thread's read buffer, :data:`READ_SIZE` bytes."""
    view: memoryview | None = getattr(_local, "view", None)
    if view is None:
        view = _local.view = memoryview(bytearray(READ_SIZE))
    return view
