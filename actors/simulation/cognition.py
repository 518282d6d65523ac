"""One synth's cognitive cycle (seed 002), pure: a bundle in, the recorded LLM events and one
`SynthCognized` out; and `SynthMind`, the fold of a synth's stream into its state.

The LLM call is injected: `llm(request, call_index)` performs and records the call and
hands back its events ([LlmRequested, LlmCompleted] or [LlmRequested, LlmFailed]), so the
same code runs live, scripted and replayed. The model's misbehaviour never raises: an
invalid reply is retried once with the validation error, then the synth waits and the
failure is written into its `SynthCognized`. (A `ReplayDivergence` from `llm` is not
misbehaviour; it propagates.)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from pydantic import ValidationError

from actors.runtime.behaviour import Behaviour, Command
from actors.runtime.llm.types import LlmRequest
from actors.simulation.payloads import ActionSurface, ActuationIntent, SensoryBundle
from actors.simulation.prompts import system_prompt, user_message
from actors.simulation.schemas import (
    MAX_BELIEF_UPDATES,
    MAX_MEMORIES,
    MAX_THEORY_OF_MIND,
    SynthCognitiveResponse,
    response_schema,
)
from actors.simulation.synth import Belief, Memory, SynthState
from actors.simulation.theory_of_mind import clip, update_mental_models
from events.base import Event
from events.effects import LlmCompleted, LlmFailed, LlmRequested
from actors.simulation.events import SynthCognized, SynthCreated, SynthPatched

LlmCall = Callable[[LlmRequest, int], list[Event]]

DEFAULT_MAX_TOKENS = 512  # a full response is ~300 tokens; more is a model rambling
MAX_BELIEFS = 12  # beliefs a synth holds (the oldest go first)
MAX_KEPT_MEMORIES = 20  # memories a synth keeps (the oldest go first)
COMMUNICATE = "communicate"
WAIT = "wait"


# -- the request ---------------------------------------------------------------------------------


def build_request(
    state: SynthState, bundle: SensoryBundle, *, model: str, params: dict[str, Any], seed: int
) -> LlmRequest:
    """The one call of this microcycle: the mind as the system prompt, the moment as the
    user message, the world's seed, and a schema whose action ids are the menu's."""
    return LlmRequest(
        model=model,
        messages=[
            {"role": "system", "content": system_prompt(state)},
            {"role": "user", "content": user_message(bundle, _aims(state))},
        ],
        params={"max_tokens": DEFAULT_MAX_TOKENS, **params, "seed": seed},
        response_schema=response_schema([o.action_id for o in bundle.surface.options]),
    )


def _aims(state: SynthState) -> list[str]:
    return [p.goal for p in state.projects if p.status == "active"][:2]


def retry_request(first: LlmRequest, reply: str | None, error: str) -> LlmRequest:
    """The second try: the bad reply and what was wrong with it. A failed call has no reply
    to correct, so it is asked again as it was."""
    if reply is None:
        return first
    correction = (
        f"Your reply was not valid: {error}\n"
        "Reply again with the whole JSON object, choosing action ids only from the Actions list."
    )
    return first.model_copy(
        update={
            "messages": [
                *first.messages,
                {"role": "assistant", "content": reply},
                {"role": "user", "content": correction},
            ]
        }
    )


# -- reading a reply -----------------------------------------------------------------------------


def _json_object(content: str) -> dict[str, Any] | None:
    """The JSON object in a reply: the whole text, or the outermost braces (fences, prose)."""
    text = content.strip()
    candidates = [text]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def _validation_summary(error: ValidationError, limit: int = 3) -> str:
    problems = [
        f"{'.'.join(str(p) for p in e['loc']) or 'reply'}: {e['msg']}" for e in error.errors()[:limit]
    ]
    more = error.error_count() - limit
    return "; ".join(problems) + (f"; and {more} more" if more > 0 else "")


def check_intents(response: SynthCognitiveResponse, surface: ActionSurface) -> str | None:
    """Why the chosen intents cannot be used, or None: ids from the menu only, words for
    `communicate`, at most one action besides one `communicate`."""
    ids = surface.ids()
    off_menu = [i.action_id for i in response.intents if i.action_id not in ids]
    if off_menu:
        menu = ", ".join(o.action_id for o in surface.options)
        return f"action id {off_menu[0]!r} is not on the menu; choose from: {menu}"
    speech = [i for i in response.intents if i.action_id == COMMUNICATE]
    if any(not i.say.strip() for i in speech):
        return 'communicate needs your words in "say"'
    if len(speech) > 1:
        return "speak at most once: use one communicate"
    acts = [i.action_id for i in response.intents if i.action_id != COMMUNICATE]
    if len(acts) > 1:
        return f"choose at most one action besides communicate, not {', '.join(acts)}"
    return None


Reading = tuple[SynthCognitiveResponse | None, str | None, str | None]


def read_reply(events: Iterable[Event], surface: ActionSurface) -> Reading:
    """(response, reply text, error) for one recorded call: a usable response and no
    error, or no response and why. The reply text is what the model said (None when the
    call failed), for the retry to show it."""
    outcome = next((e for e in events if isinstance(e, (LlmCompleted, LlmFailed))), None)
    if isinstance(outcome, LlmFailed):
        return None, None, f"the call failed: {outcome.error.line()}"
    if outcome is None:
        return None, None, "the call recorded no result"
    reply = outcome.content or (json.dumps(outcome.parsed) if outcome.parsed is not None else "")
    data = outcome.parsed if isinstance(outcome.parsed, dict) else _json_object(outcome.content)
    if data is None:
        return None, reply, "the reply is not a JSON object"
    try:
        response = SynthCognitiveResponse.model_validate(data)
    except ValidationError as e:
        return None, reply, _validation_summary(e)
    problem = check_intents(response, surface)
    if problem is not None:
        return None, reply, problem
    return response, reply, None


# -- the cycle -------------------------------------------------------------------------------------


def known_others(state: SynthState, bundle: SensoryBundle) -> set[str]:
    """The synths this one knows of now: those it already models, those who would hear it,
    those it heard (an outside stimulus is not a synth)."""
    names = {*state.mental_models, *bundle.surface.hearers, *(c.speaker for c in bundle.heard if c.speaker_id)}
    return {n for n in names if n and n != state.identity.name}


def used_response(response: SynthCognitiveResponse, known: set[str], self_name: str) -> SynthCognitiveResponse:
    """The response as the mind takes it: lists capped, theory of mind only about known
    others and under their own spelling (what the model said in full stays in the recorded
    completion)."""
    spelling = {n.casefold(): n for n in known if n.casefold() != self_name.casefold()}
    tom = [
        e.model_copy(update={"name": spelling[key]})
        for e in response.theory_of_mind
        if (key := " ".join(e.name.split()).casefold()) in spelling
    ]
    return response.model_copy(
        update={
            "belief_updates": response.belief_updates[:MAX_BELIEF_UPDATES],
            "memories": [m for m in response.memories if m.strip()][:MAX_MEMORIES],
            "theory_of_mind": tom[:MAX_THEORY_OF_MIND],
        }
    )


def intents_of(response: SynthCognitiveResponse, synth_id: str) -> list[ActuationIntent]:
    if not response.intents:  # choosing nothing is waiting
        return [ActuationIntent(synth_id=synth_id, action_id=WAIT)]
    return [
        ActuationIntent(
            synth_id=synth_id, action_id=i.action_id, text=i.say.strip() if i.action_id == COMMUNICATE else ""
        )
        for i in response.intents
    ]


def cognize(
    state: SynthState,
    bundle: SensoryBundle,
    llm: LlmCall,
    *,
    model: str,
    params: dict[str, Any],
    seed: int,
) -> list[Event]:
    """One cognitive call (and at most one retry) of one synth in one microcycle: the
    recorded LLM events, in order, then one `SynthCognized` with the intents."""
    request = build_request(state, bundle, model=model, params=params, seed=seed)
    call_index = state.llm_calls
    recorded: list[Event] = []
    response: SynthCognitiveResponse | None = None
    error: str | None = None
    attempts = 0
    while attempts < 2:
        attempts += 1
        call_index += 1
        events = list(llm(request, call_index))
        recorded += events
        response, reply, error = read_reply(events, bundle.surface)
        if response is not None:
            break
        request = retry_request(request, reply, error or "")
    if response is not None:
        used = used_response(response, known_others(state, bundle), state.identity.name)
        intents = intents_of(used, bundle.synth_id)
        dumped: dict[str, Any] | None = used.model_dump(mode="json")
    else:
        intents = [ActuationIntent(synth_id=bundle.synth_id, action_id=WAIT)]
        dumped = None
    cognized = SynthCognized(
        cycle=bundle.cycle,
        microcycle=bundle.microcycle,
        call_index=call_index,
        response=dumped,
        intents=[i.model_dump(mode="json") for i in intents],
        attempts=attempts,
        error=None if response is not None else error,
    )
    return [*recorded, cognized]


# -- the fold ----------------------------------------------------------------------------------------


def apply_response(state: SynthState, response: SynthCognitiveResponse, cycle: int) -> SynthState:
    """What a used response changes in the mind: beliefs (one per subject, the newest),
    mood, memories and mental models, all bounded."""
    beliefs = list(state.beliefs)
    for update in response.belief_updates[:MAX_BELIEF_UPDATES]:
        subject = clip(update.subject, 60)
        if not subject or not update.content.strip():
            continue
        beliefs = [b for b in beliefs if b.subject.casefold() != subject.casefold()]
        beliefs.append(Belief(subject=subject, content=clip(update.content, 200), confidence=update.confidence))
    memories = list(state.memories) + [
        Memory(content=clip(m, 200), cycle=cycle) for m in response.memories[:MAX_MEMORIES] if m.strip()
    ]
    mood = clip(response.mood, 40) or state.affect.mood
    entries = response.theory_of_mind[:MAX_THEORY_OF_MIND]
    # cognize kept only entries about synths known at the time; the fold trusts that record
    models = update_mental_models(
        state.mental_models, entries, state.identity.name, {*state.mental_models, *(e.name for e in entries)}
    )
    return state.model_copy(
        update={
            "beliefs": beliefs[-MAX_BELIEFS:],
            "memories": memories[-MAX_KEPT_MEMORIES:],
            "affect": state.affect.model_copy(update={"mood": mood}),
            "mental_models": models,
        }
    )


def evolve(state: SynthState, event: Event) -> SynthState:
    if isinstance(event, SynthCreated):
        return SynthState.model_validate(event.synth)
    if isinstance(event, LlmRequested):
        return state.model_copy(update={"llm_calls": max(state.llm_calls, event.call_index)})
    if isinstance(event, SynthCognized):
        if event.response is not None:
            state = apply_response(state, SynthCognitiveResponse.model_validate(event.response), event.cycle)
        return state.model_copy(
            update={"cognitions": state.cognitions + 1, "llm_calls": max(state.llm_calls, event.call_index)}
        )
    if isinstance(event, SynthPatched):  # an admin patch: whole fields replaced
        return SynthState.model_validate({**state.model_dump(mode="python"), **event.changes})
    return state  # LlmCompleted / LlmFailed: the SynthCognized that follows says what they meant


class SynthMind(Behaviour[SynthState]):
    """A synth's stream as a behaviour, so the runtime can fold it (`chorus state`). The
    director's cycle drives synths through `cognize`; there are no commands to decide."""

    name = "synth"
    state_type = SynthState

    def decide(self, state: SynthState, command: Command) -> list[Event]:
        raise TypeError(f"a synth takes no commands ({type(command).__name__}): the director's cycle drives it")

    def evolve(self, state: SynthState, event: Event) -> SynthState:
        return evolve(state, event)
