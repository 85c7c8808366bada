"""The reactive cell shells."""

from .queue import QueueCell
from .topic import TopicCell
from .work_queue import WorkQueueCell

__all__ = ["QueueCell", "TopicCell", "WorkQueueCell"]
