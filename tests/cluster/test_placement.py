"""Placement rules (CHORUS_PLACEMENT): pure parsing, no Ray."""

from __future__ import annotations

import pytest

from actors.runtime.placement import (
    MARKER,
    PlacementError,
    Rule,
    option_fields,
    parse_placement,
    rule_for,
)
from actors.runtime.settings import ConfigError, Settings

NODE = "ab" * 28


def test_rules_by_role_with_a_default():
    rules = parse_placement(f"agent=resource:chorus_llm+spread, vectors=resource:chorus_vectors:1, *=node:{NODE}:soft")
    assert rule_for(rules, "agent:run1") == Rule(resource="chorus_llm", amount=MARKER, strategy="spread")
    assert option_fields(rule_for(rules, "agent:run1")) == {
        "resources": {"chorus_llm": MARKER}, "scheduling_strategy": "SPREAD",
    }  # fmt: skip
    assert option_fields(rule_for(rules, "vectors")) == {"resources": {"chorus_vectors": 1.0}}
    assert option_fields(rule_for(rules, "task:run2")) == {"scheduling_strategy": ("node", NODE, True)}


def test_no_rules_place_nothing():
    assert option_fields(rule_for(parse_placement(""), "agent:x")) == {}
    assert option_fields(rule_for(parse_placement("agent=any"), "agent:x")) == {}
    assert option_fields(rule_for(parse_placement("agent=spread"), "relay:x")) == {}


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("agent", "ROLE=RULE"),
        ("agent=gpu", "use resource:NAME"),
        ("agent=resource:", "use resource:NAME"),
        ("agent=resource:x:-1", "must be positive"),
        ("agent=resource:x:lots", "not a number"),
        ("agent=node:nope", "56 hex digits"),
        (f"agent=node:{NODE}:maybe", "soft or hard"),
        ("agent=spread+node:" + NODE, "one of spread and node"),
        ("agent=resource:a+resource:b", "one resource"),
        ("agent=spread,agent=any", "twice"),
    ],
)
def test_bad_rules_get_a_one_line_error(text, says):
    with pytest.raises(PlacementError, match=says) as caught:
        parse_placement(text)
    assert "\n" not in str(caught.value)


def test_settings_refuse_a_bad_placement_and_vectors_mode(tmp_path, monkeypatch):
    monkeypatch.setenv("CHORUS_PLACEMENT", "agent=gpu")
    with pytest.raises(ConfigError, match="placement 'gpu'"):
        Settings.from_env(data_dir=tmp_path)
    monkeypatch.setenv("CHORUS_PLACEMENT", "agent=resource:chorus_llm")
    assert Settings.from_env(data_dir=tmp_path).placement == "agent=resource:chorus_llm"
    monkeypatch.setenv("CHORUS_VECTORS", "shared")
    with pytest.raises(ConfigError, match="CHORUS_VECTORS='shared'"):
        Settings.from_env(data_dir=tmp_path)
