"""The cognitive cycle of one synth with a scripted model: what it asks, how it reads the
reply, the one retry, the fallback to `wait`, and the fold of its stream."""

from __future__ import annotations

import json
from typing import Any

import pytest

from actors.runtime.llm.gateway import requested_event
from actors.runtime.llm.types import LlmRequest
from actors.simulation.cognition import (
    MAX_BELIEFS,
    MAX_KEPT_MEMORIES,
    SynthMind,
    cognize,
    evolve,
)
from actors.simulation.payloads import (
    ActionOption,
    ActionSurface,
    CommunicationEvent,
    Observation,
    SensoryBundle,
)
from actors.simulation.schemas import MAX_BELIEF_UPDATES, MAX_MEMORIES, response_schema
from actors.simulation.synth import Belief, Identity, MentalModel, SynthState
from actors.runtime.behaviour import Command
from events.base import Event
from events.effects import LlmCompleted, LlmFailed, LlmRequested
from events.errors import ErrorInfo
from actors.simulation.events import SynthCognized, SynthCreated

SEED = 1234
WRENCH = "take_6f1c0c2e-0000-4000-8000-000000000001"
CHEST = "open_6f1c0c2e-0000-4000-8000-000000000002"


def make_state(**changes: Any) -> SynthState:
    base = SynthState(
        synth_id="synth-thomas",
        identity=Identity(name="Thomas", description="The lighthouse keeper."),
        beliefs=[Belief(subject="beacon", content="The beacon lamp is jammed.")],
        mental_models={"Margaret": MentalModel(name="Margaret", believed_mood="worried")},
    )
    return base.model_copy(update=changes)


def make_bundle(**changes: Any) -> SensoryBundle:
    base = SensoryBundle(
        synth_id="synth-thomas",
        cycle=3,
        microcycle=1,
        time="21:00",
        location_id="loc-lamp-room",
        location_name="Lamp Room",
        observations=[Observation(channel="visual", text="A wrench lies on the floor.")],
        heard=[
            CommunicationEvent(
                speaker_id="synth-margaret", speaker="Margaret", text="Is the lamp lit?", location_id="loc-lamp-room",
                hearer_ids=["synth-thomas"],
            )
        ],
        surface=ActionSurface(
            options=[
                ActionOption(action_id=WRENCH, label="Pick up Wrench"),
                ActionOption(action_id=CHEST, label="Open Tool Chest"),
                ActionOption(action_id="wait", label="Do nothing this turn"),
                ActionOption(action_id="communicate", label="Speak"),
            ],
            hearers=["Margaret"],
        ),
    )
    return base.model_copy(update=changes)


def reply(*intents: tuple[str, str], **fields: Any) -> dict[str, Any]:
    return {
        "inner_monologue": {"react": "A wrench.", "interpret": "I can fix the lamp.", "deliberate": "Take it.", "resolve": "Now."},
        "intents": [{"action_id": a, "say": s} for a, s in intents],
        "mood": "determined",
        "belief_updates": [{"subject": "wrench", "content": "There is a wrench here.", "confidence": 0.9}],
        "memories": ["Found a wrench in the lamp room."],
        "theory_of_mind": [],
        **fields,
    }


class ScriptedLlm:
    """Answers each call with the next scripted reply: a dict (parsed JSON), a str (raw
    content), or an ErrorInfo (a failed call). Keeps the requests it was asked."""

    def __init__(self, *replies: dict[str, Any] | str | ErrorInfo) -> None:
        self.replies = list(replies)
        self.requests: list[tuple[LlmRequest, int]] = []

    def __call__(self, request: LlmRequest, call_index: int) -> list[Event]:
        self.requests.append((request, call_index))
        answer = self.replies.pop(0)
        asked = requested_event(request, call_index)
        if isinstance(answer, ErrorInfo):
            return [asked, LlmFailed(request_hash=asked.request_hash, call_index=call_index, error=answer)]
        if isinstance(answer, dict):
            content, parsed = json.dumps(answer), answer
        else:
            content, parsed = answer, None
        return [asked, LlmCompleted(request_hash=asked.request_hash, call_index=call_index, content=content, parsed=parsed)]


def run(state: SynthState, llm: ScriptedLlm, bundle: SensoryBundle | None = None, **params: Any) -> list[Event]:
    return cognize(state, bundle or make_bundle(), llm, model="qwen-test", params=params, seed=SEED)


def cognized(events: list[Event]) -> SynthCognized:
    assert isinstance(events[-1], SynthCognized)
    assert sum(isinstance(e, SynthCognized) for e in events) == 1
    return events[-1]


# -- asking -------------------------------------------------------------------------------------------


def test_a_valid_response_becomes_intents() -> None:
    llm = ScriptedLlm(reply((WRENCH, ""), ("communicate", "I found the wrench, Margaret.")))
    events = run(make_state(llm_calls=4), llm)

    assert [type(e) for e in events] == [LlmRequested, LlmCompleted, SynthCognized]
    done = cognized(events)
    assert done.call_index == 5 and events[0].call_index == 5  # continues from state.llm_calls
    assert done.attempts == 1 and done.error is None
    assert (done.cycle, done.microcycle) == (3, 1)
    assert [(i["synth_id"], i["action_id"], i["text"]) for i in done.intents] == [
        ("synth-thomas", WRENCH, ""),
        ("synth-thomas", "communicate", "I found the wrench, Margaret."),
    ]
    assert done.response is not None and done.response["mood"] == "determined"


def test_the_request_is_the_mind_and_the_moment_with_the_worlds_seed() -> None:
    llm = ScriptedLlm(reply(("wait", "")))
    run(make_state(), llm, temperature=0.7, seed=999)
    request, _ = llm.requests[0]

    assert [m["role"] for m in request.messages] == ["system", "user"]  # no conversation history
    assert request.params["seed"] == SEED  # the world's seed wins over a caller's
    assert request.params["temperature"] == 0.7
    assert 0 < request.params["max_tokens"] <= 1024
    assert request.response_schema == response_schema([WRENCH, CHEST, "wait", "communicate"])
    assert "The beacon lamp is jammed." in request.messages[0]["content"]
    assert f"{WRENCH}: Pick up Wrench" in request.messages[1]["content"]


def test_the_same_mind_and_moment_ask_the_same_question() -> None:
    first, second, other = ScriptedLlm(reply(("wait", ""))), ScriptedLlm(reply(("wait", ""))), ScriptedLlm(reply(("wait", "")))
    a = run(make_state(), first)[0]
    b = run(make_state(), second)[0]
    c = run(make_state(), other, make_bundle(time="22:00"))[0]

    assert isinstance(a, LlmRequested) and isinstance(b, LlmRequested) and isinstance(c, LlmRequested)
    assert a.request_hash == b.request_hash == first.requests[0][0].hash()
    assert c.request_hash != a.request_hash


# -- retrying ---------------------------------------------------------------------------------------


def test_an_action_off_the_menu_is_retried_once_with_the_error() -> None:
    bad = reply(("repair_not-on-the-menu", ""))
    llm = ScriptedLlm(bad, reply((CHEST, "")))
    events = run(make_state(), llm)

    assert [type(e) for e in events] == [LlmRequested, LlmCompleted, LlmRequested, LlmCompleted, SynthCognized]
    (first, i1), (second, i2) = llm.requests
    assert (i1, i2) == (1, 2)
    assert second.messages[:2] == first.messages
    assert [m["role"] for m in second.messages] == ["system", "user", "assistant", "user"]
    assert json.loads(second.messages[2]["content"]) == bad
    assert "repair_not-on-the-menu" in second.messages[3]["content"]
    assert "not on the menu" in second.messages[3]["content"]
    assert second.params == first.params and second.response_schema == first.response_schema
    done = cognized(events)
    assert done.attempts == 2 and done.call_index == 2 and done.error is None
    assert [i["action_id"] for i in done.intents] == [CHEST]


def test_invalid_twice_is_a_lone_wait_with_the_failure_recorded() -> None:
    llm = ScriptedLlm("I think I will take the wrench!", reply(("repair_nothing", "")))
    events = run(make_state(), llm)

    second = llm.requests[1][0]
    assert second.messages[2] == {"role": "assistant", "content": "I think I will take the wrench!"}
    assert "not a JSON object" in second.messages[3]["content"]
    done = cognized(events)
    assert done.attempts == 2 and done.call_index == 2
    assert done.response is None
    assert done.intents == [{"synth_id": "synth-thomas", "action_id": "wait", "text": "", "priority": 0, "details": {}}]
    assert done.error is not None and "repair_nothing" in done.error


def test_a_reply_in_fences_with_prose_is_read() -> None:
    text = "Here you go:\n```json\n" + json.dumps(reply((WRENCH, ""))) + "\n```"
    done = cognized(run(make_state(), ScriptedLlm(text)))
    assert done.attempts == 1 and [i["action_id"] for i in done.intents] == [WRENCH]


@pytest.mark.parametrize(
    ("intents", "complaint"),
    [
        ([("communicate", "  ")], "say"),
        ([(WRENCH, ""), (CHEST, "")], "at most one action"),
        ([("communicate", "hi"), ("communicate", "again")], "at most once"),
    ],
)
def test_intents_that_break_the_rules_are_retried(intents: list[tuple[str, str]], complaint: str) -> None:
    llm = ScriptedLlm(reply(*intents), reply(("wait", "")))
    done = cognized(run(make_state(), llm))
    assert done.attempts == 2 and done.error is None
    assert complaint in llm.requests[1][0].messages[3]["content"]


def test_a_schema_violation_is_retried_with_the_field_named() -> None:
    llm = ScriptedLlm({"intents": [{"say": "no id"}]}, reply(("wait", "")))
    cognized(run(make_state(), llm))
    assert "intents.0.action_id" in llm.requests[1][0].messages[3]["content"]


def test_a_failed_call_is_retried_then_the_synth_waits() -> None:
    down = ErrorInfo(type="llm_error", reason="timeout", message="no answer in 300s")
    llm = ScriptedLlm(down, down)
    events = run(make_state(llm_calls=7), llm)

    assert [type(e) for e in events] == [LlmRequested, LlmFailed, LlmRequested, LlmFailed, SynthCognized]
    assert [i for _, i in llm.requests] == [8, 9]
    assert llm.requests[1][0] == llm.requests[0][0]  # no reply to correct: asked again as it was
    done = cognized(events)
    assert done.attempts == 2 and done.call_index == 9 and done.response is None
    assert [i["action_id"] for i in done.intents] == ["wait"]
    assert done.error is not None and "timeout" in done.error


def test_a_failed_call_then_a_good_one_is_used() -> None:
    down = ErrorInfo(type="llm_error", reason="unreachable", message="connection refused")
    done = cognized(run(make_state(), ScriptedLlm(down, reply((WRENCH, "")))))
    assert done.attempts == 2 and done.error is None and [i["action_id"] for i in done.intents] == [WRENCH]


def test_no_intents_is_waiting() -> None:
    done = cognized(run(make_state(), ScriptedLlm(reply())))
    assert done.attempts == 1 and [i["action_id"] for i in done.intents] == ["wait"]


def test_theory_of_mind_about_strangers_or_oneself_is_not_used() -> None:
    tom = [
        {"name": "margaret", "believed_mood": "anxious", "believed_beliefs_about_me": ["he is slow"]},
        {"name": "Zeus", "believed_mood": "angry"},
        {"name": "Thomas", "believed_mood": "proud"},
    ]
    done = cognized(run(make_state(mental_models={}), ScriptedLlm(reply(("wait", ""), theory_of_mind=tom))))
    assert done.response is not None
    assert [e["name"] for e in done.response["theory_of_mind"]] == ["Margaret"]  # a hearer, as spelt


# -- the fold -----------------------------------------------------------------------------------------


def created(state: SynthState) -> SynthCreated:
    return SynthCreated(synth=state.model_dump(mode="json"))


def test_folding_a_cognition_changes_the_mind() -> None:
    state0 = make_state()
    tom = [
        {
            "name": "Margaret",
            "believed_location": "Lamp Room",
            "believed_mood": "anxious",
            "believed_goals": ["light the lamp"],
            "believed_beliefs_about_me": ["he is slow", {"she thinks I think": "nested"}],
            "confidence": 0.7,
        }
    ]
    answer = reply(
        (WRENCH, ""),
        belief_updates=[
            {"subject": "Beacon", "content": "The lamp needs a wrench.", "confidence": 0.95},
            {"subject": "storm", "content": "A storm is coming.", "confidence": 3},
        ],
        theory_of_mind=tom,
    )
    events = [created(state0), *run(state0, ScriptedLlm(answer))]
    state = SynthMind().fold(SynthMind().initial(), events)

    assert state.llm_calls == 1 and state.cognitions == 1
    assert state.affect.mood == "determined"
    beliefs = {b.subject: b for b in state.beliefs}
    assert set(beliefs) == {"Beacon", "storm"}  # "Beacon" replaced "beacon"
    assert beliefs["Beacon"].content == "The lamp needs a wrench."
    assert beliefs["storm"].confidence == 1.0
    assert [(m.content, m.cycle) for m in state.memories] == [("Found a wrench in the lamp room.", 3)]
    margaret = state.mental_models["Margaret"]
    assert margaret.believed_mood == "anxious" and margaret.believed_location == "Lamp Room"
    assert margaret.believed_beliefs_about_me == ["he is slow"]  # depth capped at 1
    assert margaret.confidence == 0.7


def test_the_next_cognition_continues_the_call_count() -> None:
    state0 = make_state()
    down = ErrorInfo(type="llm_error", reason="timeout", message="slow")
    state = SynthMind().fold(state0, run(state0, ScriptedLlm(down, down)))
    assert state.llm_calls == 2 and state.cognitions == 1
    assert state.beliefs == state0.beliefs  # an unused response changes nothing else

    llm = ScriptedLlm(reply(("wait", "")))
    run(state, llm)
    assert llm.requests[0][1] == 3


def test_beliefs_and_memories_stay_bounded() -> None:
    state = make_state()
    for n in range(30):
        answer = reply(
            ("wait", ""),
            belief_updates=[{"subject": f"thing {n}", "content": f"fact {n}", "confidence": 0.5}],
            memories=[f"memory {n}"],
        )
        state = SynthMind().fold(state, run(state, ScriptedLlm(answer), make_bundle(cycle=n)))
    assert len(state.beliefs) == MAX_BELIEFS and state.beliefs[-1].content == "fact 29"
    assert len(state.memories) == MAX_KEPT_MEMORIES and state.memories[-1].content == "memory 29"
    assert state.memories[-1].cycle == 29 and state.cognitions == 30 and state.llm_calls == 30


def test_a_long_response_is_capped_when_applied() -> None:
    answer = reply(
        ("wait", ""),
        belief_updates=[{"subject": f"s{n}", "content": "c", "confidence": 0.5} for n in range(9)],
        memories=[f"m{n}" for n in range(9)],
        mood="x" * 500,
    )
    event = SynthCognized(cycle=1, microcycle=1, call_index=1, response=answer, intents=[])
    state = evolve(make_state(beliefs=[]), event)
    assert len(state.beliefs) == MAX_BELIEF_UPDATES and len(state.memories) == MAX_MEMORIES
    assert len(state.affect.mood) <= 40


def test_a_synth_takes_no_commands() -> None:
    with pytest.raises(TypeError):
        SynthMind().decide(make_state(), Command(key="go"))
    assert SynthMind.name == "synth" and SynthMind.state_type is SynthState
