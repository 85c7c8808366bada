"""The reactive cell shells."""

from .job import Job
from .message import Message
from .queue import QueueCell
from .topic import TopicCell
from .work_queue import WorkQueueCell

__all__ = ["Job", "Message", "QueueCell", "TopicCell", "WorkQueueCell"]
