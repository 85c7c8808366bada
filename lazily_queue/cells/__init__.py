"""The reactive cell shells."""

from .queue import QueueCell

__all__ = ["QueueCell"]
