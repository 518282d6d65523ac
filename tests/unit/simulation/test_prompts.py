"""The words a synth's model reads: the mind in the system prompt, the moment (and only the
menu's ids) in the user message, and nothing a synth's senses did not bring."""

from __future__ import annotations

from actors.simulation.payloads import (
    ActionOption,
    ActionOutcome,
    ActionSurface,
    CommunicationEvent,
    Observation,
    SensoryBundle,
)
from actors.simulation.prompts import system_prompt, user_message
from actors.simulation.synth import Affect, Belief, Identity, Memory, MentalModel, Project, SynthState

MOVE = "move_to_0b7e-0001"
INSPECT = "inspect_0b7e-0002"


def mind(**changes: object) -> SynthState:
    return SynthState(
        synth_id="synth-james",
        identity=Identity(name="James", description="A retired sailor.", traits=["patient"], voice="slowly"),
        affect=Affect(mood="uneasy", energy=0.3),
        beliefs=[Belief(subject="weather", content="A storm is coming.", confidence=0.9)],
        projects=[Project(name="beacon", goal="Get the beacon lit."), Project(name="old", goal="Paint the door.", status="done")],
        mental_models={
            "Thomas": MentalModel(
                name="Thomas", believed_location="Lamp Room", believed_mood="tense",
                believed_goals=["fix the lamp"], believed_beliefs_about_me=["I am useless in the dark"],
            )
        },
        memories=[Memory(content="Heard a bell at dusk.", cycle=2)],
    ).model_copy(update=changes)


def bundle(observations: list[Observation], **changes: object) -> SensoryBundle:
    return SensoryBundle(
        synth_id="synth-james",
        cycle=4,
        microcycle=2,
        time="night, 23:10",
        location_id="loc-ground",
        location_name="Ground Floor",
        observations=observations,
        heard=[
            CommunicationEvent(
                speaker_id="synth-thomas", speaker="Thomas", text="Bring the wrench up!",
                location_id="loc-ground", hearer_ids=["synth-james"],
            ),
            CommunicationEvent(
                speaker_id="", speaker="a voice on the radio", text="Storm warning.",
                location_id="loc-ground", hearer_ids=["synth-james"],
            ),
        ],
        surface=ActionSurface(
            options=[
                ActionOption(action_id=MOVE, label="Move to Lamp Room"),
                ActionOption(action_id=INSPECT, label="Examine Tool Chest closely"),
                ActionOption(action_id="wait", label="Do nothing this turn"),
                ActionOption(action_id="communicate", label="Speak"),
            ],
            hearers=["Margaret", "Thomas"],
        ),
        previous_outcomes=[
            ActionOutcome(
                synth_id="synth-james", action_id="take_0b7e-0003", status="blocked",
                reason="already carried by Margaret",
            )
        ],
    ).model_copy(update=changes)


ALL_SENSES = [
    Observation(channel="visual", text="A tool chest, closed."),
    Observation(channel="auditory", text="Rain drums on the roof."),
    Observation(channel="tactile", text="The air is cold (6 C)."),
    Observation(channel="proprioceptive", text="You are standing."),
]


def test_the_system_prompt_is_the_mind() -> None:
    prompt = system_prompt(mind())
    for expected in (
        "You are James. A retired sailor.",
        "patient",
        "Mood: uneasy",
        "tired",
        "- weather: A storm is coming. (confidence 0.9)",
        "- beacon: Get the beacon lit.",
        "Thomas: at Lamp Room; seems tense; wants fix the lamp;",
        "thinks of you: I am useless in the dark",
        "(turn 2) Heard a bell at dusk.",
        "action_id copied exactly from the menu",
        "JSON object",
    ):
        assert expected in prompt, expected
    assert "Paint the door" not in prompt  # a finished project is no longer on the mind


def test_a_sense_the_synth_lacks_is_said_plainly() -> None:
    assert "You cannot see." in system_prompt(mind(senses=["auditory", "tactile", "proprioceptive"]))
    assert "cannot see" not in system_prompt(mind())


def test_an_empty_mind_has_no_empty_sections() -> None:
    prompt = system_prompt(SynthState(synth_id="s", identity=Identity(name="Ada")))
    for heading in ("What you believe:", "Your projects:", "What you think of others:", "What you remember"):
        assert heading not in prompt


def test_the_user_message_is_the_moment_and_the_menu() -> None:
    text = user_message(bundle(ALL_SENSES))
    for expected in (
        "Time: night, 23:10.",
        "You are at: Ground Floor.",
        "You see:\n- A tool chest, closed.",
        "You hear:\n- Rain drums on the roof.",
        "You feel:\n- The air is cold (6 C).",
        "- Thomas: Bring the wrench up!",
        "- a voice on the radio: Storm warning.",
        "- take_0b7e-0003: blocked (already carried by Margaret)",
        f"{MOVE}: Move to Lamp Room",
        f"{INSPECT}: Examine Tool Chest closely",
        "wait: Do nothing this turn",
        "communicate: Speak",
        "Who would hear you speak: Margaret, Thomas.",
    ):
        assert expected in text, expected
    menu = [line.split(":")[0] for line in text.split("Actions (choose by action_id):\n")[1].splitlines() if ": " in line]
    assert menu[:4] == [MOVE, INSPECT, "wait", "communicate"]


def test_a_blind_synths_moment_has_no_visual_section() -> None:
    blind = [o for o in ALL_SENSES if o.channel != "visual"]
    text = user_message(bundle(blind))
    assert "You see" not in text and "tool chest, closed" not in text
    assert "You hear:" in text


def test_no_one_to_hear_is_said() -> None:
    alone = bundle([], heard=[], previous_outcomes=[])
    alone = alone.model_copy(update={"surface": alone.surface.model_copy(update={"hearers": []})})
    text = user_message(alone)
    assert "No one would hear you speak now." in text
    assert "Words you heard" not in text and "last acted" not in text
