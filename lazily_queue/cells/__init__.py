"""The reactive cell shells."""

from .job import Job
from .queue import QueueCell
from .topic import TopicCell
from .work_queue import WorkQueueCell

__all__ = ["Job", "QueueCell", "TopicCell", "WorkQueueCell"]
