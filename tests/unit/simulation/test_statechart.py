"""The statechart interpreter: timed and guarded transitions, hierarchy, entry."""

from __future__ import annotations

from actors.simulation import statechart as sc

WEATHER = {
    "initial": "calm",
    "states": {
        "calm": {"transitions": [{"target": "storm", "after": 3}]},
        "storm": {
            "initial": "gusting",
            "transitions": [{"target": "calm", "when": {"tide": "low"}}],
            "states": {
                "gusting": {
                    "transitions": [{"target": "raging", "after": 2}],
                    "on_enter": [{"set_environment": {"w": "g"}}],
                },
                "raging": {"transitions": [{"target": "calm", "after": 1}]},
            },
            "on_enter": [{"set_environment": {"weather": "storm"}}],
        },
    },
}


def test_initial_state_enters_the_initial_leaf():
    assert sc.initial_state(WEATHER) == "calm"
    assert sc.initial_state({**WEATHER, "initial": "storm"}) == "storm.gusting"
    assert sc.enter(WEATHER, "storm") == "storm.gusting"
    assert sc.initial_state({"states": {"a": {}, "b": {}}}) == "a"  # no initial: the first


def test_after_fires_at_n_ticks_not_before():
    assert sc.step(WEATHER, "calm", 2, {}) is None
    assert sc.step(WEATHER, "calm", 3, {}) == "storm.gusting"  # compound target: its initial leaf
    assert sc.step(WEATHER, "calm", 10, {}) == "storm.gusting"


def test_sibling_targets_resolve_inside_the_compound_state():
    assert sc.step(WEATHER, "storm.gusting", 1, {}) is None
    assert sc.step(WEATHER, "storm.gusting", 2, {}) == "storm.raging"


def test_ancestor_transitions_apply_to_descendants():
    assert sc.step(WEATHER, "storm.gusting", 0, {"tide": "low"}) == "calm"
    assert sc.step(WEATHER, "storm.gusting", 0, {"tide": "high"}) is None


def test_a_childs_transition_wins_over_its_ancestors():
    # raging's own transition (after 1) and storm's (tide low) are both enabled: the child's goes first
    chart = {
        "initial": "a",
        "states": {
            "a": {
                "initial": "x",
                "transitions": [{"target": "b", "after": 1}],
                "states": {"x": {"transitions": [{"target": "y", "after": 1}]}, "y": {}},
            },
            "b": {},
        },
    }
    assert sc.step(chart, "a.x", 1, {}) == "a.y"
    assert sc.step(chart, "a.y", 1, {}) == "b"


def test_when_and_after_must_both_hold():
    chart = {"initial": "a", "states": {"a": {"transitions": [{"target": "b", "after": 2, "when": {"k": 1}}]}, "b": {}}}
    assert sc.step(chart, "a", 5, {"k": 0}) is None
    assert sc.step(chart, "a", 1, {"k": 1}) is None
    assert sc.step(chart, "a", 2, {"k": 1}) == "b"


def test_absolute_targets():
    chart = {"initial": "a", "states": {"a": {"transitions": [{"target": "b.q", "after": 0}]},
                                        "b": {"initial": "p", "states": {"p": {}, "q": {}}}}}  # fmt: skip
    assert sc.step(chart, "a", 0, {}) == "b.q"


def test_entered_states_and_on_enter():
    assert sc.entered_states("calm", "storm.gusting") == ["storm", "storm.gusting"]
    assert sc.entered_states("storm.gusting", "storm.raging") == ["storm.raging"]
    assert sc.entered_states("storm.raging", "calm") == ["calm"]
    assert sc.entered_states("calm", "calm") == ["calm"]
    assert sc.on_enter(WEATHER, "storm") == [{"set_environment": {"weather": "storm"}}]
    assert sc.on_enter(WEATHER, "calm") == []


def test_validate_chart_reports_paths():
    assert sc.validate_chart(WEATHER) == []
    bad = {
        "initial": "nowhere",
        "states": {"a": {"transitions": [{"target": "zz", "after": 1}, {"target": "a"}, {"after": 2}]}},
    }
    problems = dict(sc.validate_chart(bad))
    assert problems["initial"].startswith("unknown state")
    assert problems["states.a.transitions[0].target"] == "unknown state 'zz'"
    assert "after" in problems["states.a.transitions[1]"]
    assert "target" in problems["states.a.transitions[2]"]
    assert sc.validate_chart({"states": {}}) == [("states", "a process needs a mapping of states")]
