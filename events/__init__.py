"""The facts: event types, codec, upcasting. Importing `events` registers the event types the
runtime and several workloads share, and loads no store: the store (and its database drivers)
is `events.store`. A workload owns its events and registers them from its own folder
(`actors/<workload>/events.py`: research, tasks, the relay, the simulation; the ReAct agent
the workloads share, `actors/agent/events.py`) when its plugin is loaded
(`actors.runtime.registry.load_workloads`)."""

from events import (  # noqa: F401  (register the runtime event types)
    debug,  # noqa: F401  (what a person did while debugging: an edited completion)
    durable,  # noqa: F401  (agents written as plain functions)
    effects,
    runs,
)
from events.base import Event, State
from events.errors import ErrorInfo
from events.registry import event_type, upcaster

__all__ = ["ErrorInfo", "Event", "State", "event_type", "upcaster"]
