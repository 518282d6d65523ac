"""The facts: event types, codec, event store, upcasting."""

from events import agent, effects, runs  # noqa: F401  (register the runtime event types)
from events import relay, research  # noqa: F401  (the relay and research workloads' event types)
from events import tasks  # noqa: F401  (the task workflows' event types, seed 001)
from events.base import Event, State
from events.errors import ErrorInfo
from events.registry import event_type, upcaster
from events.store import ConcurrencyError, EventStore, Recorded, Snapshot, StoreUnavailable

__all__ = [
    "ConcurrencyError",
    "ErrorInfo",
    "Event",
    "EventStore",
    "Recorded",
    "Snapshot",
    "State",
    "StoreUnavailable",
    "event_type",
    "upcaster",
]
