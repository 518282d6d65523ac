"""The simulation's snapshot format reads old documents through the seed's migration
chain 0.1.0 -> 0.2.0 -> 0.3.0, and refuses a format it does not know."""

from __future__ import annotations

import pytest

from actors.simulation.snapshot import SIM_SNAPSHOT_FORMAT, migrate, migration_chain

WORLD = {"name": "w", "locations": {}, "entities": {}}
SYNTH = {"synth_id": "s1", "identity": {"name": "Ann"}}


def test_the_chain_is_the_seeds():
    assert migration_chain("0.1.0") == ["0.1.0", "0.2.0", "0.3.0"] and SIM_SNAPSHOT_FORMAT == "0.3.0"


def test_a_0_1_0_document_gains_a_director_mental_models_and_versions():
    snap = migrate({"format": "0.1.0", "world": WORLD, "synths": {"s1": SYNTH}})
    assert snap.format == "0.3.0" and snap.director == {} and snap.versions == {}
    assert snap.synths["s1"]["mental_models"] == {} and snap.synths["s1"]["identity"] == {"name": "Ann"}


def test_a_0_2_0_document_keeps_its_director():
    doc = {"format": "0.2.0", "world": WORLD, "director": {"cycle": 4}, "synths": {}}
    snap = migrate(doc)
    assert snap.director == {"cycle": 4} and snap.versions == {}


def test_a_current_document_is_read_as_is():
    doc = {"format": "0.3.0", "world": WORLD, "director": {}, "synths": {}, "versions": {"sim:r:world": 3}}
    assert migrate(doc).versions == {"sim:r:world": 3}


def test_an_unknown_format_is_refused_in_one_line():
    with pytest.raises(ValueError) as info:
        migrate({"format": "9.0.0", "world": WORLD, "director": {}, "synths": {}})
    assert "9.0.0" in str(info.value) and "\n" not in str(info.value)
