"""What a synth's one cognitive call answers (seed 002's SynthCognitiveResponse).

Kept small on purpose: the default model is a 1.5B one whose decoding llama.cpp constrains
with a grammar built from `response_schema()`, so the schema is flat (no $defs, no anyOf),
its lists are short, and every field is plain text or a number. The pydantic side is lenient
where leniency costs nothing (extra keys ignored, confidences clamped, nested values in a
flat list dropped) and strict where a mistake would act on the world (the action ids, which
`actors.simulation.cognition` checks against the menu).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, field_validator

# How many of each list a response may carry (the schema's maxItems; applying caps again).
MAX_BELIEF_UPDATES = 2
MAX_MEMORIES = 1
MAX_INTENTS = 2
MAX_THEORY_OF_MIND = 2
MAX_TOM_ITEMS = 2  # items in each of a mental model's lists


def _clamp(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.5
    return min(1.0, max(0.0, number))


def _flat_strings(value: Any) -> list[str]:
    """A list of strings, whatever a small model put there; nested structures are dropped
    (this is where theory of mind's depth is capped at 1)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value.strip() else []
    if not isinstance(value, list):
        return [str(value)]
    return [item if isinstance(item, str) else str(item) for item in value if not isinstance(item, (dict, list))]


class InnerMonologue(BaseModel):
    """react -> interpret -> deliberate -> resolve: thinking before choosing."""

    react: str = ""
    interpret: str = ""
    deliberate: str = ""
    resolve: str = ""


class BeliefUpdate(BaseModel):
    subject: str
    content: str
    confidence: float = 0.8

    @field_validator("confidence", mode="before")
    @classmethod
    def _clamped(cls, value: Any) -> float:
        return _clamp(value)


class IntentChoice(BaseModel):
    action_id: str
    say: str = ""  # the words, for `communicate`


class TheoryOfMindEntry(BaseModel):
    name: str
    believed_location: str = ""
    believed_mood: str = ""
    believed_goals: list[str] = []
    believed_knowledge: list[str] = []
    believed_beliefs_about_me: list[str] = []
    confidence: float = 0.5

    @field_validator("confidence", mode="before")
    @classmethod
    def _clamped(cls, value: Any) -> float:
        return _clamp(value)

    @field_validator("believed_goals", "believed_knowledge", "believed_beliefs_about_me", mode="before")
    @classmethod
    def _flat(cls, value: Any) -> list[str]:
        return _flat_strings(value)


class SynthCognitiveResponse(BaseModel):
    inner_monologue: InnerMonologue = InnerMonologue()
    belief_updates: list[BeliefUpdate] = []
    mood: str = ""
    memories: list[str] = []
    intents: list[IntentChoice] = []
    theory_of_mind: list[TheoryOfMindEntry] = []

    @field_validator("memories", mode="before")
    @classmethod
    def _flat(cls, value: Any) -> list[str]:
        return _flat_strings(value)


def response_schema(action_ids: Sequence[str] | None = None) -> dict[str, Any]:
    """The JSON schema of a response, flat for llama.cpp's grammar. With `action_ids` (the
    menu, in its order) the grammar can only emit ids from the menu; validation checks
    them anyway, since not every endpoint constrains decoding.

    Field order is generation order: think first, then choose, then update the mind.
    No maxLength: bounded string repetition makes llama.cpp's grammar large and slow, so
    lengths are asked for in the prompt and cut when applied."""
    text: dict[str, Any] = {"type": "string"}
    number: dict[str, Any] = {"type": "number"}
    texts = {"type": "array", "items": text, "maxItems": MAX_TOM_ITEMS}

    def obj(properties: dict[str, Any]) -> dict[str, Any]:
        return {"type": "object", "properties": properties, "required": list(properties)}

    def array(items: dict[str, Any], most: int, least: int = 0) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "array", "items": items, "maxItems": most}
        if least:
            out["minItems"] = least
        return out

    action = {"type": "string", "enum": list(dict.fromkeys(action_ids))} if action_ids else text
    return obj(
        {
            "inner_monologue": obj({"react": text, "interpret": text, "deliberate": text, "resolve": text}),
            "intents": array(obj({"action_id": action, "say": text}), MAX_INTENTS, 1),
            "mood": text,
            "belief_updates": array(obj({"subject": text, "content": text, "confidence": number}), MAX_BELIEF_UPDATES),
            "memories": array(text, MAX_MEMORIES),
            "theory_of_mind": array(
                obj(
                    {
                        "name": text,
                        "believed_location": text,
                        "believed_mood": text,
                        "believed_goals": texts,
                        "believed_knowledge": texts,
                        "believed_beliefs_about_me": texts,
                        "confidence": number,
                    }
                ),
                MAX_THEORY_OF_MIND,
            ),
        }
    )
