"""In-process backends: the reference deque (the same FIFO the Raft state machine uses)."""

from ..core.fifo import VecDequeStorage

__all__ = ["VecDequeStorage"]
