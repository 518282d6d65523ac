"""The ruleset: component schemas, affordances and validation by property path."""

from __future__ import annotations

import pytest

from actors.simulation.ruleset import PHYSICAL_SOCIAL_V1, get_ruleset, validate_component


def test_get_ruleset_by_ref_and_unknown_ref_is_one_line():
    assert get_ruleset("physical_social_v1") is PHYSICAL_SOCIAL_V1
    with pytest.raises(ValueError) as e:
        get_ruleset("physical_social_v9")
    assert "physical_social_v9" in str(e.value)
    assert "\n" not in str(e.value)


def test_vocabulary_and_affordances():
    r = PHYSICAL_SOCIAL_V1
    for name in ("Repairable", "Switchable", "LightSource", "Portable", "Consumable", "Container", "Tool",
                 "SoundSource", "Body", "Senses", "Temperature"):  # fmt: skip
        assert r.schema(name) is not None, name
    assert r.schema("Repairable").affordances == ["repair"]
    assert r.schema("Switchable").affordances == ["switch"]
    assert r.schema("Portable").affordances == ["take"]
    assert r.schema("Consumable").affordances == ["consume"]
    assert r.schema("Container").affordances == ["open"]
    assert r.schema("LightSource").affordances == []
    assert r.affordances({"Portable": {}, "Repairable": {}, "Tool": {}, "Mystery": {}}) == ["take", "repair"]
    assert set(r.ref_paths("Repairable")) == {("links", True)}
    assert r.ref_paths("Tool") == []


def test_valid_component_has_no_problems():
    errors, warnings = validate_component(
        PHYSICAL_SOCIAL_V1,
        "Repairable",
        {"condition": "jammed", "repair_requirements": {"tools": ["wrench"]}, "links": ["x"]},
    )
    assert errors == [] and warnings == []
    assert validate_component(PHYSICAL_SOCIAL_V1, "Portable", {}) == ([], [])
    assert validate_component(PHYSICAL_SOCIAL_V1, "LightSource", {"lit": True, "intensity": 1}) == ([], [])


def test_missing_required_property_is_an_error_with_its_path():
    errors, _ = validate_component(PHYSICAL_SOCIAL_V1, "Repairable", {})
    assert errors == [("components.Repairable.condition", "required property missing")]


def test_nested_required_property_path():
    errors, _ = validate_component(
        PHYSICAL_SOCIAL_V1, "Repairable", {"condition": "ok", "repair_requirements": {}}
    )
    assert errors == [("components.Repairable.repair_requirements.tools", "required property missing")]


def test_wrong_types_are_errors():
    errors, _ = validate_component(PHYSICAL_SOCIAL_V1, "Switchable", {"on": "yes"})
    assert [p for p, _ in errors] == ["components.Switchable.on"]
    assert "bool" in errors[0][1]
    errors, _ = validate_component(PHYSICAL_SOCIAL_V1, "Consumable", {"uses": True})
    assert [p for p, _ in errors] == ["components.Consumable.uses"]
    errors, _ = validate_component(PHYSICAL_SOCIAL_V1, "Consumable", {"uses": 2.5})
    assert [p for p, _ in errors] == ["components.Consumable.uses"]
    errors, _ = validate_component(PHYSICAL_SOCIAL_V1, "Repairable", {"condition": "rusty"})
    assert [p for p, _ in errors] == ["components.Repairable.condition"]
    errors, _ = validate_component(PHYSICAL_SOCIAL_V1, "Senses", {"channels": ["visual", "smell"]})
    assert [p for p, _ in errors] == ["components.Senses.channels[1]"]
    errors, _ = validate_component(PHYSICAL_SOCIAL_V1, "Container", "open")
    assert [p for p, _ in errors] == ["components.Container"]


def test_unknown_component_type_is_a_warning_not_an_error():
    errors, warnings = validate_component(PHYSICAL_SOCIAL_V1, "Haunted", {"ghosts": 3})
    assert errors == []
    assert warnings and warnings[0][0] == "components.Haunted"


def test_unknown_property_is_a_warning():
    errors, warnings = validate_component(PHYSICAL_SOCIAL_V1, "Tool", {"kind": "saw", "sharp": True})
    assert errors == []
    assert warnings == [("components.Tool.sharp", "unknown property")]
