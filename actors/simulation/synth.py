"""A synth's mind (seed 002): identity, body, senses, inner state, beliefs, projects,
mental models of others, memories and mood. It is the state of the synth's stream; the
system prompt renders it (the prompt is the mind: there is no conversation history).

The body is an entity in the world with the synth's id; what the synth can sense is its
`senses`, which perception enforces (a synth without "visual" sees nothing).
"""

from __future__ import annotations

from pydantic import BaseModel

from events.base import State


class Identity(BaseModel):
    name: str
    description: str = ""  # who they are, in a sentence or two
    traits: list[str] = []
    voice: str = ""  # how they speak


class Belief(BaseModel):
    subject: str
    content: str
    confidence: float = 0.8


class Project(BaseModel):
    name: str
    goal: str
    status: str = "active"  # active / done / dropped


class Memory(BaseModel):
    content: str
    cycle: int = 0
    salience: float = 0.5


class Affect(BaseModel):
    mood: str = "calm"
    energy: float = 0.7  # 0..1


class MentalModel(BaseModel):
    """What this synth thinks of another (theory of mind, depth capped at 1)."""

    name: str
    believed_location: str = ""
    believed_mood: str = ""
    believed_goals: list[str] = []
    believed_knowledge: list[str] = []
    believed_beliefs_about_me: list[str] = []  # what I think they think of me
    confidence: float = 0.5


class SynthState(State):
    synth_id: str = ""
    identity: Identity = Identity(name="")
    senses: list[str] = ["visual", "auditory", "tactile", "proprioceptive"]
    affect: Affect = Affect()
    beliefs: list[Belief] = []
    projects: list[Project] = []
    mental_models: dict[str, MentalModel] = {}  # by the other synth's name
    memories: list[Memory] = []
    llm_calls: int = 0  # the last call index recorded in the stream
    cognitions: int = 0  # committed SynthCognized events
