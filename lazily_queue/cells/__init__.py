"""The reactive cell shells."""

from .group import GroupCell
from .job import Job
from .message import Message
from .queue import QueueCell
from .topic import TopicCell
from .work_queue import WorkQueueCell

__all__ = ["GroupCell", "Job", "Message", "QueueCell", "TopicCell", "WorkQueueCell"]
