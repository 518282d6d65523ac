"""Mental models of others: only known synths, depth capped at 1, every list bounded."""

from __future__ import annotations

from actors.simulation.schemas import MAX_TOM_ITEMS, TheoryOfMindEntry
from actors.simulation.synth import MentalModel
from actors.simulation.theory_of_mind import MAX_MODELS, update_mental_models

KNOWN = ["Thomas", "Margaret", "James"]


def test_only_known_other_synths_get_a_model() -> None:
    entries = [
        TheoryOfMindEntry(name="Margaret", believed_mood="worried"),
        TheoryOfMindEntry(name="Thomas", believed_mood="proud"),  # myself
        TheoryOfMindEntry(name="The Sea", believed_mood="angry"),  # no such synth
    ]
    models = update_mental_models({}, entries, "Thomas", KNOWN)
    assert list(models) == ["Margaret"]
    assert models["Margaret"].believed_mood == "worried"


def test_names_match_loosely_and_keep_their_spelling() -> None:
    models = update_mental_models({}, [{"name": "  margaret ", "believed_location": "Keeper's Cottage"}], "Thomas", KNOWN)
    assert list(models) == ["Margaret"] and models["Margaret"].name == "Margaret"


def test_blank_fields_keep_what_was_believed() -> None:
    before = {"Margaret": MentalModel(name="Margaret", believed_location="Lamp Room", believed_goals=["light the lamp"])}
    models = update_mental_models(before, [TheoryOfMindEntry(name="Margaret", believed_mood="calm", confidence=0.9)], "Thomas", KNOWN)
    m = models["Margaret"]
    assert (m.believed_location, m.believed_goals, m.believed_mood, m.confidence) == ("Lamp Room", ["light the lamp"], "calm", 0.9)
    assert before["Margaret"].believed_mood == ""  # the input is not changed


def test_depth_is_capped_at_one() -> None:
    entry = {
        "name": "James",
        "believed_beliefs_about_me": [
            "he trusts me",
            {"name": "Thomas", "believed_beliefs_about_me": ["James thinks I think..."]},
            ["deeper", ["and deeper"]],
        ],
    }
    models = update_mental_models({}, [entry], "Thomas", KNOWN)
    assert models["James"].believed_beliefs_about_me == ["he trusts me"]
    assert all(isinstance(b, str) for b in models["James"].believed_beliefs_about_me)


def test_lists_texts_and_the_number_of_models_are_bounded() -> None:
    entry = TheoryOfMindEntry(
        name="James",
        believed_goals=[f"goal {n}" for n in range(10)],
        believed_knowledge=["x" * 1000],
        believed_beliefs_about_me=["same", "same", "other"],
        confidence=4.0,
    )
    m = update_mental_models({}, [entry], "Thomas", KNOWN)["James"]
    assert len(m.believed_goals) == MAX_TOM_ITEMS
    assert len(m.believed_knowledge[0]) <= 160
    assert m.believed_beliefs_about_me == ["same", "other"]
    assert m.confidence == 1.0

    many = [f"Synth {n}" for n in range(MAX_MODELS + 4)]
    models = update_mental_models({}, [TheoryOfMindEntry(name=n) for n in many], "Thomas", many)
    assert len(models) == MAX_MODELS
    assert list(models) == many[-MAX_MODELS:]  # the least recently updated are forgotten


def test_a_model_of_oneself_already_held_is_dropped() -> None:
    before = {"Thomas": MentalModel(name="Thomas"), "James": MentalModel(name="James")}
    assert list(update_mental_models(before, [], "Thomas", KNOWN)) == ["James"]
