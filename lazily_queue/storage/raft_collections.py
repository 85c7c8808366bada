"""Raft-backed topic and work-queue storages (see raft_topic.py and raft_work_queue.py)."""

from ..core.work_masks import ALL_WORK_READERS
from .raft_topic import RaftTopicStorage
from .raft_work_queue import RaftWorkQueueStorage

__all__ = ["ALL_WORK_READERS", "RaftTopicStorage", "RaftWorkQueueStorage"]
