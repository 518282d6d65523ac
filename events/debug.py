"""What a person did to a run while debugging it, recorded on the run's log."""

from __future__ import annotations

from typing import Any

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


@event_type("PromptEdited")
class PromptEdited(Event):
    """A fork continues from an LLM call whose prompt a person replaced. It is on the fork's
    agent stream, right after `AgentForked`: the agent sends `edited` in place of the prompt
    it would have built for call `call_index`, live, and the model's answer is recorded as
    usual (so a replay re-asks the edited prompt and is served that answer). Who (`edited_by`),
    where (the origin run, its position, the call) and what (the messages the model had been
    sent, and the person's)."""

    origin_run: str
    origin_position: int
    actor: str  # the stream of the edited call, in the fork
    call_index: int
    original: list[dict[str, Any]]
    edited: list[dict[str, Any]]
    edited_by: str
