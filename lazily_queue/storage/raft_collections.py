"""Raft-backed topic and work-queue storages (see raft_topic.py and raft_work_queue.py)."""

from .raft_topic import RaftTopicStorage
from .raft_work_queue import ALL_WORK_READERS, RaftWorkQueueStorage

__all__ = ["ALL_WORK_READERS", "RaftTopicStorage", "RaftWorkQueueStorage"]
