"""Perception: channel-filtered observations and the grounded action surface."""

from __future__ import annotations

from actors.simulation.payloads import ActuationIntent, CommunicationEvent, SensoryBundle
from actors.simulation.perception import action_surface, compose_bundle, is_lit, light_level, senses_of
from actors.simulation.perception_policy import LowLightAmbiguityPolicy, PerceptionPolicy
from actors.simulation.resolver import resolve
from actors.simulation.world import World

from .worlds import NAMES, WorldBuilder, keeper_world


def bundle(world: World, synth_id: str, **kw) -> SensoryBundle:
    kw.setdefault("heard", [])
    return compose_bundle(world, synth_id, senses_of(world.body_of(synth_id)), cycle=1, microcycle=0,
                          previous_outcomes=[], names=NAMES, **kw)  # fmt: skip


def texts(b: SensoryBundle, channel: str) -> list[str]:
    return [o.text for o in b.observations if o.channel == channel]


def act(world: World, synth_id: str, action_id: str) -> str:
    [(outcome, _)] = resolve(world, [ActuationIntent(synth_id=synth_id, action_id=action_id)], cycle=1, microcycle=0)
    return outcome.status


def test_blind_synth_gets_no_visual_observations_but_hears_and_feels():
    b = bundle(keeper_world(), "ben")
    assert [o for o in b.observations if o.channel == "visual"] == []
    assert any("bell tolling" in t for t in texts(b, "auditory"))
    assert any("Beacon Lamp" in t for t in texts(b, "tactile"))  # a hand finds what eyes cannot
    assert texts(b, "proprioceptive")[0] == "You are in Lamp_Room."


def test_blind_synth_still_acts_by_touch_on_what_is_within_reach():
    ids = action_surface(keeper_world(), "ben", NAMES).ids()
    assert {"take_torch", "repair_lamp", "open_chest", "inspect_lamp"} <= ids


def test_sighted_synth_sees_the_room_but_not_inside_a_closed_chest():
    b = bundle(keeper_world(), "ann")
    seen = " ".join(texts(b, "visual"))
    assert "Beacon Lamp (unlit, jammed)" in seen and "Tool Chest (closed)" in seen
    assert "Wrench" not in seen
    assert "Ben is here." in texts(b, "visual")
    assert "An exit leads to Stairs." in texts(b, "visual")
    assert "take_wrench" not in b.surface.ids() and "inspect_wrench" not in b.surface.ids()


def test_senses_argument_filters_channels():
    world = keeper_world()
    b = compose_bundle(world, "ann", ["proprioceptive"], cycle=1, microcycle=0, heard=[], previous_outcomes=[], names=NAMES)
    assert {o.channel for o in b.observations} == {"proprioceptive"}


def test_surface_is_ordered_stable_and_ends_with_wait_and_communicate():
    world = keeper_world()
    first = [o.action_id for o in action_surface(world, "ann", NAMES).options]
    assert first == [o.action_id for o in action_surface(world, "ann", NAMES).options]
    assert first[0] == "move_to_stairs" and first[-2:] == ["wait", "communicate"]
    kinds = [i.split("_")[0] for i in first[1:-2]]
    assert kinds == sorted(kinds, key=["inspect", "repair", "switch", "take", "open", "consume"].index)


def test_communicate_names_who_can_hear():
    world = keeper_world()
    surface = action_surface(world, "ann", NAMES)
    assert surface.hearers == ["Ben"]  # Cal is on the stairs, and deaf
    comm = next(o for o in surface.options if o.action_id == "communicate")
    assert comm.label == "Speak (Ben can hear you)"
    assert action_surface(world, "cal", NAMES).hearers == []


def test_deaf_synth_is_not_a_hearer_even_in_the_same_room():
    world = keeper_world()
    act(world, "cal", "move_to_lamp_room")
    assert action_surface(world, "ann", NAMES).hearers == ["Ben"]
    assert action_surface(world, "cal", NAMES).hearers == ["Ann", "Ben"]


def test_opening_stops_offering_open_and_makes_contents_takeable():
    world = keeper_world()
    assert act(world, "ann", "open_chest") == "ok"
    b = bundle(world, "ann")
    assert "open_chest" not in b.surface.ids()
    assert {"take_wrench", "inspect_wrench"} <= b.surface.ids()
    assert any(t.startswith("You see Wrench (in Tool Chest)") for t in texts(b, "visual"))


def test_carried_things_are_proprioceptive_and_felt_not_takeable():
    world = keeper_world()
    act(world, "ann", "take_torch")
    b = bundle(world, "ann")
    assert "You are carrying Torch." in texts(b, "proprioceptive")
    assert "You feel Torch in your grip." in texts(b, "tactile")
    assert "take_torch" not in b.surface.ids() and "switch_torch" in b.surface.ids()
    act(world, "cal", "move_to_lamp_room")
    assert "Ann is here, carrying Torch." in texts(bundle(world, "cal"), "visual")
    assert "take_torch" not in action_surface(world, "ben", NAMES).ids()  # held by another


def test_the_dark_hides_things_but_a_hand_finds_them_and_light_shows_through_exits():
    world = (
        WorldBuilder(ambient_light=0.1)
        .place("cellar", name="Cellar")
        .place("hall", near=("cellar",), name="Hall")
        .place("yard", near=("cellar",), name="Yard")
        .thing("box", "cellar", name="Box", Portable={})
        .thing("lantern", "hall", name="Lantern", LightSource={"lit": True})
        .synth("eye", "cellar", name="Eye", channels=("visual", "proprioceptive"))
        .synth("hand", "cellar", name="Hand", channels=("visual", "tactile", "proprioceptive"))
        .build()
    )
    assert not is_lit(world, "cellar") and is_lit(world, "hall") and not is_lit(world, "yard")
    b = bundle(world, "eye")
    assert texts(b, "visual") == ["It is too dark to see much.", "Light shows from Hall."]
    assert "take_box" not in b.surface.ids() and "inspect_box" not in b.surface.ids()
    groping = bundle(world, "hand")
    assert "take_box" in groping.surface.ids()
    assert "Within reach you feel Box." in texts(groping, "tactile")


def test_a_dim_candle_is_enough_to_see_by():
    world = (
        WorldBuilder(ambient_light=0.0)
        .place("cellar")
        .thing("box", "cellar", name="Box", Portable={})
        .thing("candle", "cellar", name="Candle", LightSource={"lit": True, "intensity": 0.2})
        .synth("eye", "cellar", name="Eye", channels=("visual", "proprioceptive"))
        .build()
    )
    b = bundle(world, "eye")
    assert "The light here is dim." in texts(b, "visual") and "You see Box" in texts(b, "visual")
    assert light_level(world, "cellar") == 0.2


def test_a_lit_lamp_lights_a_dark_room():
    world = (
        WorldBuilder(ambient_light=0.0)
        .place("cellar")
        .thing("box", "cellar", name="Box", Portable={})
        .thing("lamp", "cellar", name="Lamp", Switchable={"on": False}, LightSource={"lit": False})
        .synth("eye", "cellar", name="Eye", channels=("visual", "proprioceptive"))
        .build()
    )
    assert "You see Box" not in texts(bundle(world, "eye"), "visual")
    act(world, "eye", "switch_lamp")
    assert is_lit(world, "cellar")
    assert "You see Box" in texts(bundle(world, "eye"), "visual")


def test_heard_speech_reaches_only_synths_with_ears():
    speech = CommunicationEvent(speaker_id="ann", speaker="Ann", text="hello", location_id="lamp_room", hearer_ids=["ben"])
    world = keeper_world()
    assert bundle(world, "ben", heard=[speech]).heard == [speech]
    assert bundle(world, "cal", heard=[speech]).heard == []


def test_time_follows_the_clock():
    world = keeper_world()
    world.clock.tick = 3
    assert bundle(world, "ann").time == "2026-01-01T18:30:00"


def test_default_policy_is_a_no_op_and_low_light_blurs_only_vision():
    dim = keeper_world(ambient_light=0.4)
    plain = bundle(dim, "ann")
    assert bundle(dim, "ann", policy=PerceptionPolicy()) == plain
    blurred = bundle(dim, "ann", policy=LowLightAmbiguityPolicy())
    for before, after in zip(plain.observations, blurred.observations, strict=True):
        if before.channel == "visual":
            assert after.salience < before.salience and after.text.startswith("In the dim light, perhaps:")
        else:
            assert after == before
    assert blurred.surface == plain.surface
    bright = keeper_world(ambient_light=0.9)
    assert bundle(bright, "ann", policy=LowLightAmbiguityPolicy()) == bundle(bright, "ann")


def test_a_loud_sound_next_door_is_heard_faintly_as_itself():
    """Through an exit comes the neighbouring source's own sound, not one heard in the room."""
    world = (
        WorldBuilder()
        .place("lamp_room")
        .place("stairs", near=("lamp_room",))
        .thing("bell", "lamp_room", name="Bell", SoundSource={"sound": "a bell tolling", "loudness": 0.8})
        .thing("kettle", "stairs", name="Kettle", SoundSource={"sound": "a kettle whistling", "loudness": 0.3})
        .synth("ann", "stairs", name="Ann")
        .build()
    )
    heard = texts(bundle(world, "ann"), "auditory")
    assert "From Lamp_Room, faintly: a bell tolling." in heard
    assert "You hear a kettle whistling (Kettle)." in heard
