"""The reactive core: sources, lazy computeds, slots, effects, batching, async glue."""

from .aio import changed, values, wait_until
from .context import (
    Context,
    ReactiveContextError,
    ReactiveCycleError,
    batch,
    default_context,
    resolve_context,
)
from .effects import Effect, effect
from .nodes import Computed, Source, computed
from .slots import Slot, SlotGroup

__all__ = [
    "Computed",
    "Context",
    "Effect",
    "ReactiveContextError",
    "ReactiveCycleError",
    "Slot",
    "SlotGroup",
    "Source",
    "batch",
    "changed",
    "computed",
    "default_context",
    "effect",
    "resolve_context",
    "values",
    "wait_until",
]
