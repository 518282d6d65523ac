"""Speech and stimuli: who hears what, through the auditory channel only."""

from __future__ import annotations

from actors.simulation.communication import heard_by, resolve_communication, stimulus_event
from actors.simulation.payloads import ActuationIntent
from actors.simulation.perception import compose_bundle, senses_of
from actors.simulation.resolver import resolve
from actors.simulation.world import apply
from actors.simulation.events import Communicated

from .worlds import NAMES, keeper_world


def say(synth_id: str, text: str) -> ActuationIntent:
    return ActuationIntent(synth_id=synth_id, action_id="communicate", text=text)


def test_speech_is_heard_by_synths_with_ears_in_the_same_place():
    world = keeper_world()
    [said] = resolve_communication(world, [say("ann", "Lamp's jammed.")], cycle=3, microcycle=2, names={"ann": "Annie"})
    assert isinstance(said, Communicated)
    assert (said.speaker_id, said.speaker, said.text, said.location_id) == ("ann", "Annie", "Lamp's jammed.", "lamp_room")
    assert said.hearer_ids == ["ben"]  # blind Ben hears; Cal is on the stairs
    assert (said.cycle, said.microcycle) == (3, 2)


def test_the_deaf_do_not_hear_and_the_speaker_does_not_hear_itself():
    world = keeper_world()
    resolve(world, [ActuationIntent(synth_id="cal", action_id="move_to_lamp_room")], cycle=1, microcycle=0)
    [ann, cal] = resolve_communication(world, [say("ann", "hi"), say("cal", "hello?")], cycle=1, microcycle=1, names=NAMES)
    assert ann.hearer_ids == ["ben"]
    assert cal.hearer_ids == ["ann", "ben"] and cal.speaker == "Cal"


def test_only_communicate_intents_that_say_something_become_speech():
    world = keeper_world()
    intents = [say("ann", "   "), ActuationIntent(synth_id="ann", action_id="wait", text="x"), say("ghost", "boo"), say("ben", "here")]
    assert [e.speaker_id for e in resolve_communication(world, intents, cycle=1, microcycle=1, names=NAMES)] == ["ben"]


def test_a_stimulus_reaches_ears_in_a_place_or_everywhere():
    world = keeper_world()
    here = stimulus_event(world, "A ship's horn.", "the sea", 1, 1, location_id="lamp_room")
    assert (here.speaker_id, here.speaker, here.hearer_ids, here.location_id) == ("", "the sea", ["ann", "ben"], "lamp_room")
    assert stimulus_event(world, "Thunder.", "the sky", 1, 1, location_id="stairs").hearer_ids == []  # deaf Cal
    everywhere = stimulus_event(world.working_copy(), "Thunder.", "the sky", 1, 1)
    assert everywhere.hearer_ids == ["ann", "ben"] and everywhere.location_id == ""


def test_heard_speech_reaches_the_hearers_next_bundle():
    world = keeper_world()
    events = resolve_communication(world, [say("ann", "Fetch the wrench.")], cycle=1, microcycle=1, names=NAMES)
    ben_heard = heard_by(events, "ben")
    assert [(h.speaker, h.text) for h in ben_heard] == [("Ann", "Fetch the wrench.")]
    assert heard_by(events, "cal") == [] and heard_by(events, "ann") == []
    bundle = compose_bundle(world, "ben", senses_of(world.body_of("ben")), cycle=1, microcycle=2,
                            heard=ben_heard, previous_outcomes=[], names=NAMES)  # fmt: skip
    assert bundle.heard == ben_heard


def test_speech_does_not_change_the_world():
    world = keeper_world()
    before = world.model_dump()
    for e in resolve_communication(world, [say("ann", "hi")], cycle=1, microcycle=1, names=NAMES):
        apply(world, e)
    assert world.model_dump() == before
