"""The content pack loader: stable ids, validation by file/entity/property path, and
containment that the kernel can trust."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.simulation.loader import CompiledPack, PackError, compile_pack, load_pack, stable_id
from actors.simulation.world import World, fold

PACKS = Path(__file__).resolve().parents[3] / "actors" / "simulation" / "packs"
SHIPPED = sorted(PACKS.glob("*.yaml"))

SMALL = """\
name: small
random_seed: 3
locations:
  - {name: Hall, adjacent: [Yard]}
  - {name: Yard}
entities:
  - name: Lamp
    location: Hall
    components:
      Repairable: {condition: broken, links: [Bulb]}
      Switchable: {on: true, links: [Bulb]}
  - {name: Bulb, in: Lamp, components: {LightSource: {lit: false}}}
  - {name: Coin, components: {Portable: {}}}
synths:
  - {name: Ann, location: Yard, carries: [Coin]}
processes:
  - name: Day
    initial: light
    states:
      light: {transitions: [{target: dark, after: 2}]}
      dark:
        on_enter: [{set_component: {entity: Lamp, component: Switchable, changes: {on: false}}}]
latent_facts:
  - {text: The coin is fake., known_by: [Ann]}
"""


def problems(text: str, filename: str = "p.yaml") -> list[str]:
    """Every problem's line; the error itself reads as one line, the first and how many more."""
    with pytest.raises(PackError) as e:
        compile_pack(text, filename)
    lines = e.value.problems
    more = f" (and {len(lines) - 1} more)" if len(lines) > 1 else ""
    assert str(e.value) == lines[0] + more and "\n" not in str(e.value)
    return lines


def assert_containment_consistent(world: World) -> None:
    placed: dict[str, int] = {}
    for loc in world.locations.values():
        for eid in loc.contained_entity_ids:
            node = world.entities[eid]
            assert node.container_id is None and node.location_id == loc.id, node.name
            placed[eid] = placed.get(eid, 0) + 1
    for node in world.entities.values():
        assert node.location_id in world.locations, node.name
        for cid in node.contained_entity_ids:
            child = world.entities[cid]
            assert child.container_id == node.id and child.location_id == node.location_id, child.name
            carrier = node.synth_id or node.carried_by_synth_id
            assert child.carried_by_synth_id == carrier, child.name
            placed[cid] = placed.get(cid, 0) + 1
        if node.container_id is not None:
            assert node.id in world.entities[node.container_id].contained_entity_ids
        else:
            assert node.id in world.locations[node.location_id].contained_entity_ids
    assert placed == {eid: 1 for eid in world.entities}  # everything is in exactly one place


# -- the shipped packs -----------------------------------------------------------------------


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_packs_load_cleanly_with_consistent_containment(path):
    pack = load_pack(path)
    assert pack.warnings == []
    assert len(pack.synths) >= 2
    assert_containment_consistent(pack.world)
    for loc in pack.world.locations.values():  # adjacency is symmetric
        for other in loc.adjacent_ids:
            assert loc.id in pack.world.locations[other].adjacent_ids
    for s in pack.synths:
        body = pack.world.entities[s.synth_id]
        assert body.synth_id == s.synth_id and body.name == s.identity.name
        assert body.components["Senses"] == {"channels": s.senses}
    assert pack.world.processes


def test_two_shipped_packs_are_unrelated():
    assert {p.name for p in SHIPPED} >= {"lighthouse.yaml", "orchard.yaml"}
    names = [{e.name for e in load_pack(p).world.entities.values()} for p in SHIPPED]
    assert not set.intersection(*names)


def test_lighthouse_is_the_seeds_example():
    pack = load_pack(PACKS / "lighthouse.yaml")
    w, ids = pack.world, pack.ids["entity"]
    assert {s.identity.name for s in pack.synths} == {"Thomas", "Margaret", "James"}
    lamp, chest, wrench = w.entities[ids["Beacon Lamp"]], w.entities[ids["Tool Chest"]], w.entities[ids["Wrench"]]
    assert lamp.components["Repairable"] == {"condition": "jammed", "repair_requirements": {"tools": ["wrench"]}}
    assert lamp.components["LightSource"]["lit"] is False and lamp.components["Switchable"]["on"] is True
    assert chest.components["Container"]["open"] is False
    assert wrench.container_id == chest.id and wrench.components["Tool"] == {"kind": "wrench"}
    assert "Portable" in w.entities[ids["Flashlight"]].components
    assert w.ruleset_ref == "physical_social_v1" and w.random_seed == 42
    assert {p.name for p in w.processes.values()} == {"Night", "Weather"}
    thomas = next(s for s in pack.synths if s.identity.name == "Thomas")
    assert any("wrench" in b.content.lower() for b in thomas.beliefs)
    assert thomas.projects


def test_blind_synth_has_no_visual_channel():
    pack = load_pack(PACKS / "lighthouse.yaml")
    james = next(s for s in pack.synths if s.identity.name == "James")
    assert "visual" not in james.senses and "auditory" in james.senses
    assert "visual" not in pack.world.entities[james.synth_id].components["Senses"]["channels"]
    others = [s for s in pack.synths if s.identity.name != "James"]
    assert all("visual" in s.senses for s in others)  # the default is all four


# -- ids and compilation ---------------------------------------------------------------------


def test_ids_are_stable_across_loads_and_the_digest_is_the_texts():
    a, b = compile_pack(SMALL, "small.yaml"), compile_pack(SMALL, "small.yaml")
    assert a.ids == b.ids and a.digest == b.digest and len(a.digest) == 64
    assert a.world.model_dump() == b.world.model_dump()
    assert [s.model_dump() for s in a.synths] == [s.model_dump() for s in b.synths]
    assert a.ids["entity"]["Lamp"] == stable_id("small", "entity", "Lamp")
    other = compile_pack(SMALL.replace("name: small", "name: other"), "small.yaml")
    assert other.ids["entity"]["Lamp"] != a.ids["entity"]["Lamp"]  # ids belong to a pack
    assert compile_pack(SMALL + "\n", "small.yaml").digest != a.digest
    one, two = load_pack(PACKS / "lighthouse.yaml"), load_pack(PACKS / "lighthouse.yaml")
    assert one.ids == two.ids and one.digest == two.digest


def test_references_compile_to_ids():
    pack = compile_pack(SMALL, "small.yaml")
    w, ids = pack.world, pack.ids
    lamp = w.entities[ids["entity"]["Lamp"]]
    assert lamp.components["Repairable"]["links"] == [ids["entity"]["Bulb"]]
    assert lamp.components["Switchable"]["links"] == [ids["entity"]["Bulb"]]
    day = w.processes[ids["process"]["Day"]]
    assert day.state == "light"
    effect = day.chart["states"]["dark"]["on_enter"][0]["set_component"]
    assert effect["entity"] == ids["entity"]["Lamp"]
    assert w.latent_facts[0].known_by == [ids["synth"]["Ann"]]
    assert pack.id_of("Ann") == ids["synth"]["Ann"] and pack.id_of("Hall") == ids["location"]["Hall"]


def test_containment_nested_and_carried():
    pack = compile_pack(SMALL, "small.yaml")
    w, ids = pack.world, pack.ids
    assert_containment_consistent(w)
    bulb, coin, ann = (w.entities[ids["entity"]["Bulb"]], w.entities[ids["entity"]["Coin"]],
                       w.entities[ids["synth"]["Ann"]])  # fmt: skip
    assert bulb.container_id == ids["entity"]["Lamp"] and bulb.location_id == ids["location"]["Hall"]
    assert coin.carried_by_synth_id == ann.id and coin.container_id == ann.id
    assert coin.location_id == ids["location"]["Yard"] == ann.location_id
    assert ann.contained_entity_ids == [coin.id]
    assert w.locations[ids["location"]["Yard"]].contained_entity_ids == [ann.id]
    assert w.locations[ids["location"]["Yard"]].adjacent_ids == [ids["location"]["Hall"]]  # made symmetric


def test_world_created_folds_back_to_the_world():
    pack = compile_pack(SMALL, "small.yaml")
    created = pack.world_created()
    assert created.pack == "small" and created.pack_digest == pack.digest
    assert fold(created, []).model_dump() == pack.world.model_dump()
    assert [c.synth["synth_id"] for c in pack.synths_created()] == [pack.ids["synth"]["Ann"]]


def test_initial_conditions_and_initial_state_effects_apply_at_load():
    text = SMALL.replace("initial: light", "initial: dark") + (
        "initial_conditions:\n  - {entity: Bulb, component: LightSource, set: {lit: true}}\n"
        "  - {environment: {fog: thick}}\n"
    )
    pack = compile_pack(text, "small.yaml")
    w, ids = pack.world, pack.ids["entity"]
    assert w.entities[ids["Bulb"]].components["LightSource"] == {"lit": True}
    assert w.entities[ids["Lamp"]].components["Switchable"]["on"] is False  # dark's on_enter
    assert w.environment == {"fog": "thick"}


def test_yaml_on_and_no_stay_strings_keys_and_values():
    pack = compile_pack(SMALL.replace("random_seed: 3", "random_seed: 3\nenvironment: {answer: no}"), "s.yaml")
    assert pack.world.environment == {"answer": "no"}
    assert "on" in pack.world.entities[pack.ids["entity"]["Lamp"]].components["Switchable"]


# -- errors and warnings ---------------------------------------------------------------------


def test_missing_required_property_names_file_entity_and_path():
    text = (PACKS / "lighthouse.yaml").read_text().replace("condition: jammed\n", "")
    lines = problems(text, "lighthouse.yaml")
    assert lines == [
        "lighthouse.yaml: entities[0].components.Repairable.condition (Beacon Lamp): required property missing"
    ]


def test_nested_required_property_path(tmp_path):
    text = SMALL.replace("condition: broken,", "condition: broken, repair_requirements: {},")
    path = tmp_path / "nested.yaml"
    path.write_text(text)
    with pytest.raises(PackError) as e:
        load_pack(path)
    assert str(e.value) == (
        "nested.yaml: entities[0].components.Repairable.repair_requirements.tools (Lamp): required property missing"
    )


def test_wrong_type_is_an_error():
    lines = problems(SMALL.replace("Switchable: {on: true", "Switchable: {on: 3"))
    assert lines == ["p.yaml: entities[0].components.Switchable.on (Lamp): expected bool, got int"]


def test_unknown_component_type_is_a_warning_not_an_error():
    pack = compile_pack(SMALL.replace("Portable: {}", "Portable: {}, Haunted: {ghosts: 2}"), "p.yaml")
    assert len(pack.warnings) == 1
    assert pack.warnings[0].startswith(
        "p.yaml: entities[2].components.Haunted (Coin): unknown component type 'Haunted'"
    )
    assert pack.world.entities[pack.ids["entity"]["Coin"]].components["Haunted"] == {"ghosts": 2}


def test_duplicate_names_are_errors():
    lines = problems(SMALL.replace("- {name: Yard}", "- {name: Hall}"))
    assert lines == ["p.yaml: locations[1].name (Hall): duplicate location name 'Hall'"]
    lines = problems(SMALL.replace("name: Bulb", "name: Lamp"))
    assert lines[0] == "p.yaml: entities[1].name (Lamp): duplicate entity name 'Lamp'"
    lines = problems(SMALL.replace("name: Coin", "name: Ann").replace("carries: [Coin]", "carries: []"))
    assert lines[0] == "p.yaml: synths[0].name (Ann): 'Ann' names both an entity and a synth"
    text = SMALL.replace("processes:\n", "processes:\n  - {name: Day, states: {a: {}}}\n")
    assert problems(text)[0] == "p.yaml: processes[1].name (Day): duplicate process name 'Day'"


def test_unknown_references_are_errors():
    assert problems(SMALL.replace("location: Hall", "location: Attic")) == [
        "p.yaml: entities[0].location (Lamp): unknown location 'Attic'"
    ]
    assert problems(SMALL.replace("adjacent: [Yard]", "adjacent: [Moon]")) == [
        "p.yaml: locations[0].adjacent[0] (Hall): unknown location 'Moon'"
    ]
    assert problems(SMALL.replace("in: Lamp", "in: Shelf")) == ["p.yaml: entities[1].in (Bulb): unknown entity 'Shelf'"]
    assert problems(SMALL.replace("carries: [Coin]", "carries: [Coin, Gold]")) == [
        "p.yaml: synths[0].carries[1] (Ann): unknown entity 'Gold'"
    ]
    assert problems(SMALL.replace("links: [Bulb]}\n      Switchable", "links: [Moth]}\n      Switchable")) == [
        "p.yaml: entities[0].components.Repairable.links (Lamp): unknown entity 'Moth'"
    ]
    assert problems(SMALL.replace("entity: Lamp, component", "entity: Lump, component")) == [
        "p.yaml: processes[0].states.dark.on_enter[0].set_component.entity (Day): unknown entity 'Lump'"
    ]
    assert problems(SMALL.replace("known_by: [Ann]", "known_by: [Bob]")) == [
        "p.yaml: latent_facts[0].known_by[0]: unknown synth 'Bob'"
    ]
    assert problems(SMALL.replace("target: dark", "target: dusk")) == [
        "p.yaml: processes[0].states.light.transitions[0].target (Day): unknown state 'dusk'"
    ]


def test_several_problems_one_line_each():
    text = SMALL.replace("condition: broken, ", "").replace("location: Hall", "location: Attic")
    lines = problems(text)
    assert len(lines) == 2
    assert all(line.startswith("p.yaml: entities[0].") and "(Lamp)" in line for line in lines)
    assert "Repairable.condition (Lamp): required property missing" in "\n".join(lines)


def test_containment_errors():
    lamp_in_bulb = "in: Bulb\n    components:\n      Repairable"
    cyc = SMALL.replace("location: Hall\n    components:\n      Repairable", lamp_in_bulb)
    assert any("containment cycle" in line for line in problems(cyc))
    twice = SMALL.replace("{name: Coin,", "{name: Coin, location: Hall,")
    assert problems(twice) == ["p.yaml: entities[2] (Coin): carried by 'Ann', so it takes no location or `in`"]
    nowhere = SMALL.replace("carries: [Coin]", "carries: []")
    assert problems(nowhere) == [
        "p.yaml: entities[2] (Coin): needs exactly one of `location` or `in` (or a synth that carries it)"
    ]


def test_bad_senses_and_synth_fields():
    assert problems(SMALL.replace("carries: [Coin]}", "carries: [Coin], senses: [smell]}")) == [
        "p.yaml: synths[0].senses[0] (Ann): input should be 'visual', 'auditory', 'tactile' or 'proprioceptive',"
        + " got 'smell'"
    ]
    lines = problems(SMALL.replace("carries: [Coin]}", "carries: [Coin], beliefs: [{subject: x}]}"))
    assert len(lines) == 1 and lines[0] == "p.yaml: synths[0].beliefs[0].content (Ann): required"


def test_yaml_syntax_error_is_one_line_with_its_line_number():
    lines = problems("name: x\nlocations:\n  - {name: Hall\n  - name: Yard: bad\n")
    assert len(lines) == 1
    assert lines[0].startswith("p.yaml: line ") and "YAML syntax error" in lines[0]
    assert problems("name: a\n  b: c\n")[0].startswith("p.yaml: line 2: ")


def test_not_a_mapping_and_missing_file_and_missing_name(tmp_path):
    assert len(problems("- just\n- a list\n")) == 1
    assert problems("- a\n")[0].startswith("p.yaml: pack: must be a mapping")
    assert problems("")[0].startswith("p.yaml: pack: must be a mapping")
    with pytest.raises(PackError) as e:
        load_pack(tmp_path / "absent.yaml")
    assert str(e.value) == f"{tmp_path / 'absent.yaml'}: no such file"
    assert problems("locations: []\n") == ["p.yaml: name: required: the pack's name (a non-empty string)"]
    assert problems("name: x\nruleset_ref: nope\n")[0].startswith("p.yaml: ruleset_ref: unknown ruleset 'nope'")


def test_compiled_pack_is_plain_data():
    pack = compile_pack(SMALL, "small.yaml")
    again = CompiledPack.model_validate_json(pack.model_dump_json())
    assert again.world.model_dump() == pack.world.model_dump()
