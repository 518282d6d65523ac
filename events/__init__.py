"""The facts: event types, codec, upcasting. Importing `events` registers the event types the
runtime and several workloads share, and loads no store: the store (and its database drivers)
is `events.store`. A workload that owns its events registers them from its own folder
(`actors/research/events.py`, `actors/tasks/events.py`) when its plugin is loaded."""

from events import (  # noqa: F401  (register the runtime event types)  # noqa: F401  (the relay workload's event types)
    agent,
    debug,  # noqa: F401  (what a person did while debugging: an edited completion)
    durable,  # noqa: F401  (agents written as plain functions)
    effects,
    relay,
    runs,
    simulation,  # noqa: F401  (the world simulation's event types, seed 002)
)
from events.base import Event, State
from events.errors import ErrorInfo
from events.registry import event_type, upcaster

__all__ = ["ErrorInfo", "Event", "State", "event_type", "upcaster"]
