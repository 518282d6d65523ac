"""Packs from a generator, compiled by the real loader (YAML text in), then driven by any
sequence of intents drawn from each synth's menu: containment invariants always hold, on
the working copy and on the canonical world the events fold into."""

from __future__ import annotations

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actors.simulation.invariants import check, check_all
from actors.simulation.loader import compile_pack
from actors.simulation.payloads import ActuationIntent
from actors.simulation.perception import action_surface
from actors.simulation.resolver import resolve
from actors.simulation.world import apply


class NoAliases(yaml.SafeDumper):
    """Repeated objects written out in full: packs refuse YAML aliases (actors.simulation.loader)."""

    def ignore_aliases(self, data):  # noqa: ARG002
        return True


COMPONENTS = st.sampled_from([
    {"Portable": {"weight": 1.0}},
    {"Portable": {}, "Tool": {"kind": "wrench"}},
    {"Container": {"open": False}},
    {"Container": {"open": True}, "Portable": {}},
    {"Repairable": {"condition": "jammed", "repair_requirements": {"tools": ["wrench"]}}, "LightSource": {"lit": False}},
    {"Switchable": {"on": False}, "LightSource": {"lit": False}, "Portable": {}},
    {"Consumable": {"uses": 1}, "Portable": {}},
    {},
])  # fmt: skip


@st.composite
def packs(draw: st.DrawFn) -> str:
    n_places = draw(st.integers(1, 4))
    places = [f"Place {i}" for i in range(n_places)]
    locations = [
        {"name": p, "adjacent": [places[j] for j in range(n_places) if j != i and draw(st.booleans())]}
        for i, p in enumerate(places)
    ]
    entities: list[dict] = []
    containers: list[str] = []
    for i in range(draw(st.integers(0, 8))):
        components = draw(COMPONENTS)
        entity = {"name": f"Thing {i}", "components": components}
        if containers and draw(st.booleans()):
            entity["in"] = draw(st.sampled_from(containers))
        else:
            entity["location"] = draw(st.sampled_from(places))
        if "Container" in components:
            containers.append(entity["name"])
        entities.append(entity)
    synths = [
        {"name": f"Synth{i}", "location": draw(st.sampled_from(places)),
         "senses": draw(st.sampled_from([["visual", "auditory", "tactile"], ["auditory", "tactile"], ["visual"]]))}
        for i in range(draw(st.integers(1, 3)))
    ]  # fmt: skip
    pack = {"name": "generated", "random_seed": draw(st.integers(0, 99)), "ruleset_ref": "physical_social_v1",
            "locations": locations, "entities": entities, "synths": synths}  # fmt: skip
    return yaml.dump(pack, Dumper=NoAliases, sort_keys=False)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=packs(), data=st.data())
def test_generated_packs_keep_their_invariants_under_any_intents(text: str, data: st.DataObject):
    world = compile_pack(text, "generated.yaml").world
    assert check_all(world) == []
    synths = sorted(e.id for e in world.entities.values() if e.synth_id)
    for _ in range(data.draw(st.integers(1, 8))):
        working = world.working_copy()
        intents = [
            ActuationIntent(synth_id=sid, action_id=data.draw(st.sampled_from(
                [o.action_id for o in action_surface(working, sid, {}).options])))
            for sid in synths
        ]  # fmt: skip
        results = resolve(working, intents, cycle=1, microcycle=1)
        assert check(working) == []
        for _, events in results:
            for e in events:
                apply(world, e)
        assert check_all(world) == []
