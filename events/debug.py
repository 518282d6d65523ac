"""What a person did to a run while debugging it, recorded on the run's log."""

from __future__ import annotations

from events.base import Event
from events.registry import event_type


@event_type("CompletionEdited")
class CompletionEdited(Event):
    """A fork continues from an LLM call whose completion a person replaced (on the fork's
    `edit:RUN` stream): who, where (the origin run, its position, the call), and what the
    model had said and what the person put in its place. The edited completion itself is
    the fork's `LlmCompleted` for that call, so a replay of the fork re-executes it exactly."""

    origin_run: str
    origin_position: int
    actor: str  # the stream of the edited call, in the fork
    call_index: int
    original: str
    edited: str
    edited_by: str
