"""The words a synth's model reads (seed 002): the system prompt is the mind, the user
message is this moment. There is no conversation history: whatever the synth should carry
from one call to the next is in its state (beliefs, memories, mental models), and the
system prompt renders that state.

Written for a 1.5B model: short lines, plain headings, the menu as `action_id: label`, and
nothing it has to infer that could be said.
"""

from __future__ import annotations

from collections.abc import Sequence

from actors.simulation.payloads import ActionOutcome, Observation, SensoryBundle
from actors.simulation.synth import MentalModel, SynthState

CHANNEL_HEADINGS = {
    "visual": "You see",
    "auditory": "You hear",
    "tactile": "You feel",
    "proprioceptive": "Your body",
}
MISSING_SENSE = {
    "visual": "You cannot see.",
    "auditory": "You cannot hear.",
    "tactile": "You cannot feel touch or temperature.",
}

INSTRUCTIONS = """How to answer:
Each turn you get what you perceive now and a menu of actions. Reply with one JSON object only:
- inner_monologue: react, interpret, deliberate, resolve: a few words each, as yourself.
- intents: the actions you choose, action_id copied exactly from the menu. At most one action,
  plus "communicate" if you want to speak; put your words in "say" (only for communicate).
- mood: one word.
- belief_updates: at most 2 NEW things you now believe (subject, content, confidence 0 to 1); [] if none.
- memories: at most 1 short new thing worth remembering; [] if none.
- theory_of_mind: at most 2 people you know: where they are, their mood, goals, what they know,
  what they think of you, and your confidence 0 to 1.
Be brief: short phrases everywhere.
Never invent an action id. Only what you perceive is real to you."""


def _energy(energy: float) -> str:
    word = "exhausted" if energy < 0.2 else "tired" if energy < 0.45 else "rested" if energy < 0.8 else "full of energy"
    return f"{word} ({energy:.1f})"


def _model_line(model: MentalModel) -> str:
    parts = [f"- {model.name}:"]
    if model.believed_location:
        parts.append(f"at {model.believed_location};")
    if model.believed_mood:
        parts.append(f"seems {model.believed_mood};")
    if model.believed_goals:
        parts.append(f"wants {', '.join(model.believed_goals)};")
    if model.believed_knowledge:
        parts.append(f"knows {', '.join(model.believed_knowledge)};")
    if model.believed_beliefs_about_me:
        parts.append(f"thinks of you: {', '.join(model.believed_beliefs_about_me)};")
    parts.append(f"(confidence {model.confidence:.1f})")
    return " ".join(parts)


def system_prompt(state: SynthState) -> str:
    """The synth's mind, rendered: identity, body and senses, inner state, beliefs,
    projects, mental models of others, recent memories, then how to answer."""
    me = state.identity
    lines = [f"You are {me.name}." + (f" {me.description}" if me.description else "")]
    if me.traits:
        lines.append(f"Traits: {', '.join(me.traits)}.")
    if me.voice:
        lines.append(f"Your voice: {me.voice.rstrip('.')}.")
    senses = [c for c in CHANNEL_HEADINGS if c in state.senses]
    lines.append(f"Your senses: {', '.join(senses) or 'none'}.")
    lines += [MISSING_SENSE[c] for c in MISSING_SENSE if c not in state.senses]
    lines.append(f"Mood: {state.affect.mood}. Energy: {_energy(state.affect.energy)}.")
    if state.beliefs:
        lines += ["", "What you believe:"]
        lines += [f"- {b.subject}: {b.content} (confidence {b.confidence:.1f})" for b in state.beliefs]
    projects = [p for p in state.projects if p.status == "active"]
    if projects:
        lines += ["", "Your projects:"]
        lines += [f"- {p.name}: {p.goal}" for p in projects]
    if state.mental_models:
        lines += ["", "What you think of others:"]
        lines += [_model_line(m) for m in state.mental_models.values()]
    if state.memories:
        lines += ["", "What you remember (oldest first):"]
        lines += [f"- (turn {m.cycle}) {m.content}" for m in state.memories]
    lines += ["", INSTRUCTIONS]
    return "\n".join(lines)


def _observations(observations: list[Observation]) -> list[str]:
    lines: list[str] = []
    for channel, heading in CHANNEL_HEADINGS.items():
        texts = [o.text for o in observations if o.channel == channel and o.text.strip()]
        if texts:
            lines += ["", f"{heading}:"] + [f"- {t}" for t in texts]
    return lines


def _outcome_line(outcome: ActionOutcome) -> str:
    return f"- {outcome.action_id}: {outcome.status}" + (f" ({outcome.reason})" if outcome.reason else "")


def user_message(bundle: SensoryBundle, aims: Sequence[str] = ()) -> str:
    """This moment: time and place, what each sense brings, what was said, how the last
    actions went, and the menu (with who would hear `communicate`). `aims` (the synth's
    active projects) are restated last: a small model heeds the end of its prompt, and
    without them it chases whatever the menu shows first."""
    lines = [f"Time: {bundle.time}. Turn {bundle.cycle}.{bundle.microcycle}.", f"You are at: {bundle.location_name}."]
    lines += _observations(bundle.observations)
    if bundle.heard:
        lines += ["", "Words you heard:"] + [f"- {c.speaker or 'someone'}: {c.text}" for c in bundle.heard]
    if bundle.previous_outcomes:
        lines += ["", "What happened when you last acted:"] + [_outcome_line(o) for o in bundle.previous_outcomes]
    lines += ["", "Actions (choose by action_id):"]
    lines += [f"{o.action_id}: {o.label}" for o in bundle.surface.options]
    if "communicate" in bundle.surface.ids():
        hearers = bundle.surface.hearers
        heard_by = f"Who would hear you speak: {', '.join(hearers)}." if hearers else "No one would hear you speak now."
        lines.append(heard_by)
    if aims:
        lines += ["", "Your aim: " + " ".join(a.rstrip(".") + "." for a in aims),
                  "Choose the action that brings you closer to it (go where what you need is)."]  # fmt: skip
    lines += ["", "Reply with the JSON object."]
    return "\n".join(lines)
