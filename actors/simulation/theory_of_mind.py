"""Thin mental models of other synths (seed 002's theory of mind), fed from what the model
said in a response and rendered back into the next system prompt.

Depth is capped at 1: a model holds what I think another believes about me as flat
strings, never their model of my model. Only synths this one knows of get a model (not
itself, not a name the model made up), and every list is short, so the prompt stays small
however long the run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from actors.simulation.schemas import MAX_TOM_ITEMS, TheoryOfMindEntry
from actors.simulation.synth import MentalModel

MAX_MODELS = 6  # mental models a synth keeps
MAX_TEXT = 160  # characters of any one remembered phrase


def clip(text: str, limit: int = MAX_TEXT) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def _items(values: Iterable[str], old: list[str]) -> list[str]:
    """New phrases when there are any, else the old ones: short, distinct, bounded."""
    fresh = [clip(v) for v in values if str(v).strip()]
    chosen = fresh if fresh else list(old)
    return list(dict.fromkeys(chosen))[:MAX_TOM_ITEMS]


def _canonical(name: str, known: Mapping[str, str]) -> str | None:
    return known.get(" ".join(name.split()).casefold())


def update_mental_models(
    models: Mapping[str, MentalModel],
    entries: Iterable[TheoryOfMindEntry | Mapping[str, Any]],
    self_name: str,
    known_names: Iterable[str],
) -> dict[str, MentalModel]:
    """The models after `entries`: each entry about a known other synth replaces what it
    says (blank fields keep the old value); entries about oneself or unknown names are
    ignored. Names match case-insensitively and are stored as `known_names` spells them."""
    me = " ".join(self_name.split()).casefold()
    known = {" ".join(n.split()).casefold(): n for n in [*models, *known_names] if n and n.strip()}
    known.pop(me, None)
    out = {name: model for name, model in models.items() if name.casefold() != me}
    for raw in entries:
        entry = raw if isinstance(raw, TheoryOfMindEntry) else TheoryOfMindEntry.model_validate(raw)
        name = _canonical(entry.name, known)
        if name is None:
            continue
        old = out.get(name, MentalModel(name=name))
        out[name] = MentalModel(
            name=name,
            believed_location=clip(entry.believed_location) or old.believed_location,
            believed_mood=clip(entry.believed_mood, 40) or old.believed_mood,
            believed_goals=_items(entry.believed_goals, old.believed_goals),
            believed_knowledge=_items(entry.believed_knowledge, old.believed_knowledge),
            believed_beliefs_about_me=_items(entry.believed_beliefs_about_me, old.believed_beliefs_about_me),
            confidence=min(1.0, max(0.0, entry.confidence)),
        )
        out[name] = out.pop(name)  # most recently updated last
    while len(out) > MAX_MODELS:  # forget the least recently updated
        out.pop(next(iter(out)))
    return out
