"""What crosses between the kernel and a synth's mind (seed 002's payloads): the
SensoryBundle a synth perceives, the ActionSurface it chooses from, the ActuationIntent it
returns, the ActionOutcome the resolver gives it, and a CommunicationEvent.

A synth never reads the world: it gets a bundle. Every entity ref is a UUID and every
action a stable id from the surface (`repair_<uuid>`, `wait`, `communicate`), so the
resolver looks refs up directly and never parses English.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

Channel = Literal["visual", "auditory", "tactile", "proprioceptive"]
OutcomeStatus = Literal["ok", "blocked", "failed"]


class Observation(BaseModel):
    channel: Channel
    text: str  # what the synth perceives, in words
    subject_id: str | None = None  # the entity, location or synth it is about
    salience: float = 1.0  # a PerceptionPolicy may lower it (dim light, say)


class ActionOption(BaseModel):
    action_id: str  # "move_to_<uuid>", "take_<uuid>", "wait", "communicate", ...
    label: str  # "Pick up Wrench"
    target_id: str | None = None


class ActionSurface(BaseModel):
    options: list[ActionOption]
    hearers: list[str] = []  # names of who would hear `communicate` now

    def ids(self) -> set[str]:
        return {o.action_id for o in self.options}


class CommunicationEvent(BaseModel):
    speaker_id: str  # a synth id; "" for an outside stimulus
    speaker: str
    text: str
    location_id: str
    hearer_ids: list[str]
    cycle: int = 0
    microcycle: int = 0


class ActionOutcome(BaseModel):
    synth_id: str
    action_id: str
    status: OutcomeStatus
    reason: str = ""  # why it was blocked or failed, or what happened
    cycle: int = 0
    microcycle: int = 0


class SensoryBundle(BaseModel):
    """Everything one synth perceives in one microcycle."""

    synth_id: str
    cycle: int
    microcycle: int
    time: str  # the simulated time, as the synth's clock shows it
    location_id: str
    location_name: str
    observations: list[Observation]
    heard: list[CommunicationEvent] = []  # speech that reached it since its last call
    surface: ActionSurface
    previous_outcomes: list[ActionOutcome] = []


class ActuationIntent(BaseModel):
    synth_id: str
    action_id: str  # one of the surface's ids
    text: str = ""  # what to say, for `communicate`
    priority: int = 0  # higher resolves first; ties keep the synths' order
    details: dict[str, Any] = {}
