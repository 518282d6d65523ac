"""Bad content packs, as a careless or hostile author writes them (actors.simulation.pack_models):
each is refused as a PackError whose text is one line naming the file, the path in the YAML and
what is wrong, never another exception; the YAML itself is bounded."""

from __future__ import annotations


import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actors.simulation.loader import MAX_DEPTH, MAX_PACK_BYTES, PackError, compile_pack
from tests.unit.simulation.test_loader import SMALL

TOP_KEYS = "name, description, random_seed, ruleset_ref, clock, environment, locations, entities, synths, " \
    "processes, latent_facts, initial_conditions"  # fmt: skip


def refused(text: str) -> tuple[str, list[str]]:
    """The one line a bad pack reads as, and every problem."""
    with pytest.raises(PackError) as e:
        compile_pack(text, "p.yaml")
    line = str(e.value)
    assert "\n" not in line and line.startswith("p.yaml: ")
    return line, e.value.problems


def first(text: str) -> str:
    return refused(text)[0]


def first_of(text: str, old: str, new: str) -> str:
    """The first problem, without the file, of `text` with `old` (once in it) made `new`."""
    assert text.count(old) == 1
    return first(text.replace(old, new)).removeprefix("p.yaml: ").split(" (and ")[0]


# -- unknown keys ----------------------------------------------------------------------------------


def test_an_unknown_key_is_an_error_naming_the_known_ones():
    assert first(SMALL.replace("random_seed: 3", "random_seed: 3\nsynth: []")) == (
        f"p.yaml: synth: unknown key 'synth' (known: {TOP_KEYS})"
    )
    assert first(SMALL.replace("{name: Yard}", "{name: Yard, adjecent: [Hall]}")) == (
        "p.yaml: locations[1].adjecent (Yard): unknown key 'adjecent' (known: name, description, adjacent, properties)"
    )
    assert first(SMALL.replace("carries: [Coin]}", "carries: [Coin], inner_state: {mod: sad}}")) == (
        "p.yaml: synths[0].inner_state.mod (Ann): unknown key 'mod' (known: mood, energy)"
    )


def test_an_unknown_key_deep_in_a_process_is_found_by_its_path():
    assert first(SMALL.replace("entity: Lamp, component", "entity: Lamp, colour: red, component")) == (
        "p.yaml: processes[0].states.dark.on_enter[0].set_component.colour (Day): unknown key 'colour'"
        " (known: entity, component, changes)"
    )
    assert first(SMALL.replace("{target: dark, after: 2}", "{target: dark, after: 2, unless: x}")) == (
        "p.yaml: processes[0].states.light.transitions[0].unless (Day): unknown key 'unless'"
        " (known: target, after, when)"
    )


def test_a_null_value_is_as_if_absent():
    pack = compile_pack(SMALL.replace("{name: Yard}", "{name: Yard, description: null, adjacent: null}"), "p.yaml")
    assert pack.world.locations[pack.ids["location"]["Yard"]].description == ""


# -- wrong types -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "line"),
    [
        ("random_seed: 3", "random_seed: '3'", "random_seed: input should be a valid integer, got '3'"),
        ("random_seed: 3", "random_seed: true", "random_seed: input should be a valid integer, got True"),
        ("carries: [Coin]}", "carries: [Coin], voice: 3}", "synths[0].voice (Ann): input should be a valid string, got 3"),
        ("carries: [Coin]}", "carries: Coin}", "synths[0].carries (Ann): input should be a valid list, got 'Coin'"),
        ("{name: Yard}", "Yard", "locations[1]: input should be a mapping, got 'Yard'"),
        ("locations:\n", "locations: 3\nx:\n", "locations: input should be a valid list, got 3"),
        ("random_seed: 3", "random_seed: 3\nenvironment: {1: x}", "environment: key 1: keys must be names (strings)"),
        ("random_seed: 3", "random_seed: 3\nenvironment: [fog]", "environment: input should be a mapping, got a list"),
        ("random_seed: 3", "random_seed: 3\nclock: {chronon_seconds: 0}",
         "clock.chronon_seconds: input should be greater than 0, got 0"),
        ("random_seed: 3", "random_seed: 3\nclock: {start: soon}",
         "clock.start: must be an ISO time like 2026-01-01T18:00:00, got 'soon'"),
        ("target: dark, after: 2", "target: dark, after: -1",
         "processes[0].states.light.transitions[0].after (Day): input should be greater than or equal to 0, got -1"),
        ("Portable: {}", "Portable: []", "entities[2].components.Portable (Coin): input should be a mapping, got a list"),
        ("carries: [Coin]}", "carries: [Coin], senses: [smell]}",
         "synths[0].senses[0] (Ann): input should be 'visual', 'auditory', 'tactile' or 'proprioceptive', got 'smell'"),
        ("{name: Yard}", "{name: '  '}", "locations[1].name: required (a non-empty string)"),
    ],
)  # fmt: skip
def test_a_wrong_type_names_its_path_and_what_it_got(old, new, line):
    assert first_of(SMALL, old, new) == line


def test_an_unquoted_timestamp_is_a_time():
    pack = compile_pack(SMALL.replace("random_seed: 3", "random_seed: 3\nclock: {start: 2026-03-01 06:00:00}"), "p")
    assert pack.world.clock.start == "2026-03-01T06:00:00"


# -- missing required fields -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "line"),
    [
        ("name: small\n", "", "name: required: the pack's name (a non-empty string)"),
        ("{name: Ann, location: Yard, ", "{name: Ann, ", "synths[0].location (Ann): required: where the synth is (a location's name)"),
        ("carries: [Coin]}", "carries: [Coin], beliefs: [{subject: x}]}", "synths[0].beliefs[0].content (Ann): required"),
        ("{text: The coin is fake., known_by", "{known_by", "latent_facts[0].text: required: the fact, in words"),
        ("- name: Day\n", "- name: Day\n    states: {}\n  - name: Dusk\n", "processes[0].states (Day): a process needs at least one state"),
        ("component: Switchable, changes: {on: false}", "component: Switchable",
         "processes[0].states.dark.on_enter[0].set_component.changes (Day): required"),
        ("{target: dark, after: 2}", "{target: dark}", "processes[0].states.light.transitions[0] (Day): a transition needs `after` or `when`"),
    ],
)  # fmt: skip
def test_a_missing_field_says_it_is_required(old, new, line):
    assert first_of(SMALL, old, new) == line


def test_an_effect_or_a_condition_of_no_known_shape():
    both = SMALL.replace("on_enter: [{set_component:", "on_enter: [{set_environment: {a: 1}, set_component:")
    assert first(both) == (
        "p.yaml: processes[0].states.dark.on_enter[0] (Day): an effect is one of {set_environment: {...}}"
        " or {set_component: {...}}"
    )
    assert first(SMALL + "initial_conditions:\n  - {entity: Bulb}\n") == (
        "p.yaml: initial_conditions[0]: needs entity, component and set (or environment)"
    )


# -- dangling references and other cross-section checks ----------------------------------------------


def test_dangling_references_each_at_its_path():
    _, lines = refused(
        SMALL.replace("adjacent: [Yard]", "adjacent: [Yard, Moon]").replace("known_by: [Ann]", "known_by: [Ann, Bob]")
        + "initial_conditions:\n  - {entity: Ghost, component: Portable, set: {}}\n"
    )
    assert lines == [
        "p.yaml: locations[0].adjacent[1] (Hall): unknown location 'Moon'",
        "p.yaml: initial_conditions[0].entity: unknown entity 'Ghost'",
        "p.yaml: latent_facts[0].known_by[1]: unknown synth 'Bob'",
    ]


def test_one_line_for_many_problems_says_how_many_more():
    text = SMALL.replace("location: Hall", "location: Attic").replace("known_by: [Ann]", "known_by: [B]")
    line, lines = refused(text)
    assert len(lines) == 2
    assert line == "p.yaml: entities[0].location (Lamp): unknown location 'Attic' (and 1 more)"


def test_a_thing_carried_twice_or_inside_itself():
    twice = SMALL.replace("synths:\n", "synths:\n  - {name: Bo, location: Hall, carries: [Coin]}\n")
    assert first(twice) == "p.yaml: synths[1].carries[0] (Ann): 'Coin' is already carried by 'Bo'"
    assert first(SMALL.replace("in: Lamp", "in: Bulb")) == "p.yaml: entities[1].in (Bulb): cannot be inside itself"
    assert first(SMALL.replace("{name: Hall, adjacent: [Yard]}", "{name: Hall, adjacent: [Hall]}")) == (
        "p.yaml: locations[0] (Hall): a location cannot be adjacent to itself"
    )


# -- not a mapping, huge, deep -------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "null\n", "- a\n- b\n", "just words\n", "42\n", "[name, x]\n"])
def test_a_pack_that_is_not_a_mapping(text):
    assert first(text).startswith("p.yaml: pack: must be a mapping (name, locations, entities, ...), got ")


def test_deep_nesting_is_refused_while_reading():
    deep = "name: x\nenvironment: {k: " + "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5) + "}\n"
    assert "nested more than" in first(deep)
    chart = "a: {states: {" * 15 + "z: {}" + "}}" * 15  # deep, but within the bound
    pack = compile_pack(f"name: x\nprocesses:\n  - {{name: P, states: {{{chart}}}}}\n", "p.yaml")
    assert next(iter(pack.world.processes.values())).state == ".".join(["a"] * 15 + ["z"])


def test_huge_packs_are_bounded_and_a_big_valid_one_loads():
    assert "larger than" in first("name: x\n#" + "y" * MAX_PACK_BYTES)
    n = 2000  # every location beside the one before it (YAML parsing is most of the time)
    rows = "".join(f"  - {{name: L{i}, adjacent: [L{i - 1 if i else 1}]}}\n" for i in range(n))
    text = f"name: big\nlocations:\n{rows}synths:\n  - {{name: A, location: L0}}\n"
    assert len(text) < MAX_PACK_BYTES
    pack = compile_pack(text, "big.yaml")  # how long it takes is a benchmark's business, not a test's
    assert len(pack.world.locations) == n
    many = text.replace("adjacent: [L", "adjacent: [M")  # a problem in every item: still one line
    line, lines = refused(many)
    assert len(lines) >= n - 1 and line.endswith(f"(and {len(lines) - 1} more)")


# -- anything at all -------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_mutation_of_a_good_pack_is_a_pack_or_a_one_line_pack_error(data):
    """Any value anywhere in the pack replaced by any other: never another exception."""
    pack = yaml.safe_load(SMALL.replace("{on:", "{'on':"))
    paths: list[tuple] = []

    def walk(node, at):
        paths.append(at)
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for k, v in items:
            walk(v, (*at, k))

    walk(pack, ())
    at = data.draw(st.sampled_from(paths[1:]))
    value = data.draw(st.one_of(
        st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=False), st.text(max_size=6),
        st.sampled_from(["Hall", "Lamp", "Ann", "Day", "dark", "visual", "Coin"]),
        st.lists(st.sampled_from(["Hall", "Lamp", "Ann", 1]), max_size=3),
        st.dictionaries(st.sampled_from(["name", "on", "x", "entity", "target"]), st.sampled_from(["Hall", 1, None]), max_size=2),
    ))  # fmt: skip
    node = pack
    for k in at[:-1]:
        node = node[k]
    node[at[-1]] = value
    text = yaml.safe_dump(pack)
    try:
        compile_pack(text, "p.yaml")
    except PackError as e:
        assert "\n" not in str(e) and str(e).startswith("p.yaml: ")
