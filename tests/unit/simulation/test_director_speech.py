"""Speech across microcycles and cycles (seed 002: "If Thomas speaks to Margaret in microcycle
1, she hears it and can respond in microcycle 2"), on the pure director: two synths in one
room, their one call per microcycle answered by a script that reads the real prompt.

Speech said where no later microcycle of its cycle is left to hear it (the last one, or
past the event budget) is carried over by the verdict and heard in the next cycle's first
microcycle; a cycle recorded before that patch (no `speech-carries-over` in its verdict)
runs as it did, so old logs replay."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

import pytest

from actors.runtime.llm.gateway import requested_event
from actors.runtime.llm.types import LlmRequest
from actors.simulation import cognition
from actors.simulation.cognition import SynthMind
from actors.simulation.director import (
    BEHAVIOUR_PATCHES,
    SPEECH_CARRIES_OVER,
    CognitionTask,
    CycleResult,
    DirectorConfig,
    DirectorState,
    evolve_director,
    run_cycle,
)
from actors.simulation.invariants import Violation
from actors.simulation.progress import describe
from actors.simulation.synth import Identity, SynthState
from actors.testing.simulation import reply
from actors.simulation.world import World, apply
from events.base import Event
from events.effects import LlmCompleted
from actors.simulation.events import Communicated, CycleCommitted, CycleRolledBack

from .worlds import WorldBuilder

TURN = re.compile(r"Turn (\d+)\.(\d+)\.")


def two_synths() -> tuple[World, dict[str, SynthState]]:
    world = WorldBuilder().place("room", indoor=True).synth("ann", "room", name="Ann").synth("bob", "room", name="Bob").build()
    synths = {sid: SynthState(synth_id=sid, identity=Identity(name=name)) for sid, name in (("ann", "Ann"), ("bob", "Bob"))}
    return world, synths


@dataclass
class Script:
    """Each synth says what `lines[(name, cycle, microcycle)]` holds, else waits; every
    bundle and prompt it was given is kept, by (name, cycle, microcycle)."""

    lines: dict[tuple[str, int, int], str]
    bundles: dict[tuple[str, int, int], list[str]] = field(default_factory=dict)  # what the bundle's `heard` held
    prompts: dict[tuple[str, int, int], str] = field(default_factory=dict)

    def __call__(self, tasks: list[CognitionTask]) -> list[list[Event]]:
        out = []
        for t in tasks:
            key = (t.state.identity.name, t.bundle.cycle, t.bundle.microcycle)
            self.bundles[key] = [f"{c.speaker}: {c.text}" for c in t.bundle.heard]

            def llm(request: LlmRequest, call_index: int, key: tuple[str, int, int] = key) -> list[Event]:
                user = str(request.messages[-1]["content"])
                self.prompts[key] = user
                cycle, micro = (int(n) for n in TURN.search(user).groups())  # type: ignore[union-attr]
                assert (cycle, micro) == key[1:]
                content = reply("wait", say=self.lines.get(key, ""))
                asked = requested_event(request, call_index)
                done = LlmCompleted(request_hash=asked.request_hash, call_index=call_index, content=content, parsed=json.loads(content))
                return [asked, done]

            out.append(cognition.cognize(t.state, t.bundle, llm, model="scripted", params={}, seed=7))
        return out


class Session:
    """The canonical state a shell would fold from the log, advanced cycle by cycle."""

    def __init__(self, script: Script, **config: object) -> None:
        self.world, self.synths = two_synths()
        self.director = DirectorState()
        self.script = script
        self.config = DirectorConfig.model_validate(config)
        self.results: list[CycleResult] = []

    def step(self, cycles: int = 1, **kw: object) -> CycleResult:
        for _ in range(cycles):
            result = run_cycle(self.world, self.director, self.synths, self.script, config=self.config, **kw)  # type: ignore[arg-type]
            self.fold(result)
        return self.results[-1]

    def fold(self, result: CycleResult) -> None:
        mind = SynthMind()
        for e in result.world_events:
            apply(self.world, e)
        for sid, events in result.llm_events.items():
            for e in events:
                self.synths[sid] = mind.evolve(self.synths[sid], e)
        for sid, events in result.synth_events.items():
            for e in events:
                self.synths[sid] = mind.evolve(self.synths[sid], e)
        for e in result.director_events:
            self.director = evolve_director(self.director, e)
        self.results.append(result)

    def spoken(self) -> list[tuple[str, str, int, int, list[str]]]:
        return [
            (e.speaker, e.text, e.cycle, e.microcycle, sorted(e.hearer_ids))
            for r in self.results for e in r.world_events if isinstance(e, Communicated)
        ]  # fmt: skip


@pytest.mark.parametrize("microcycles", [1, 2])
def test_speech_in_any_microcycle_is_heard_by_the_other_synth(microcycles):
    last = microcycles
    script = Script({("Ann", 1, 1): "Bob, is the lamp lit?", ("Bob", 1, last): "Not yet, Ann."})
    s = Session(script, max_microcycles=microcycles)
    s.step(2)
    assert ("Ann", "Bob, is the lamp lit?", 1, 1, ["bob"]) in s.spoken()
    assert ("Bob", "Not yet, Ann.", 1, last, ["ann"]) in s.spoken()
    # Ann's question, said in microcycle 1: heard in 1.2 when there is one, else in 2.1.
    heard_at = (1, 2) if microcycles == 2 else (2, 1)
    assert script.bundles[("Bob", *heard_at)] == ["Ann: Bob, is the lamp lit?"]
    assert "Words you heard:\n- Ann: Bob, is the lamp lit?" in script.prompts[("Bob", *heard_at)]
    # Bob's answer, said in the cycle's last microcycle: heard in the next cycle's first.
    assert script.bundles[("Ann", 2, 1)] == ["Bob: Not yet, Ann."]
    assert "Words you heard:\n- Bob: Not yet, Ann." in script.prompts[("Ann", 2, 1)]
    # Each line is heard once: never again in a later microcycle or cycle.
    heard = [(k, line) for k, lines in script.bundles.items() for line in lines]
    assert sorted(line for _, line in heard) == ["Ann: Bob, is the lamp lit?", "Bob: Not yet, Ann."]


def test_the_verdict_carries_the_unheard_speech_and_the_next_commit_clears_it():
    s = Session(Script({("Ann", 1, 1): "Hello?"}), max_microcycles=1)
    first = s.step()
    verdict = first.verdict
    assert isinstance(verdict, CycleCommitted)
    assert list(verdict.carried_speech) == ["bob"] and verdict.carried_speech["bob"][0]["text"] == "Hello?"
    assert verdict.behaviour_patches == sorted(BEHAVIOUR_PATCHES) and not verdict.quiescent  # the world had not settled
    assert s.director.speech == verdict.carried_speech  # canonical: folded from the event
    assert "1 line(s) of speech heard next cycle" in describe(verdict)
    second = s.step()  # Bob hears it in 2.1 and says nothing: the cycle settles
    assert second.verdict.carried_speech == {} and s.director.speech == {} and second.quiescent


def test_speech_left_unheard_by_the_event_budget_is_carried_over_too():
    # One world event (the clock) spends the budget: the loop stops after microcycle 1.
    script = Script({("Ann", 1, 1): "Hello?"})
    s = Session(script, max_microcycles=3, max_events=1)
    first = s.step()
    assert first.microcycles == 1 and not first.quiescent
    s.step()
    assert script.bundles[("Bob", 2, 1)] == ["Ann: Hello?"]


def test_a_rolled_back_cycle_leaves_the_carried_speech_for_the_next_one():
    script = Script({("Ann", 1, 1): "Hello?"})
    s = Session(script, max_microcycles=1)
    s.step()
    carried = dict(s.director.speech)
    refused = s.step(check=lambda w: [Violation("injected", "a test says no")])
    assert isinstance(refused.verdict, CycleRolledBack) and refused.verdict.behaviour_patches == sorted(BEHAVIOUR_PATCHES)
    assert script.bundles[("Bob", 2, 1)] == ["Ann: Hello?"]  # perceived in the cycle that rolled back ...
    assert s.director.speech == carried  # ... which changed nothing of the mind or the world
    s.step()
    assert script.bundles[("Bob", 3, 1)] == ["Ann: Hello?"]  # so the next cycle delivers it


def test_a_cycle_recorded_before_the_patch_runs_as_it_did():
    """Replay passes a verdict's recorded patches; an old verdict names none."""
    script = Script({("Ann", 1, 1): "Hello?"})
    s = Session(script, max_microcycles=1)
    old = s.step(behaviour_patches=())
    assert old.verdict.carried_speech == {} and old.verdict.behaviour_patches == [] and s.director.speech == {}
    s.step(behaviour_patches=())
    assert script.bundles[("Bob", 2, 1)] == []  # never heard, as before the patch
    assert SPEECH_CARRIES_OVER in BEHAVIOUR_PATCHES


def test_a_deaf_synth_is_carried_nothing():
    world = (
        WorldBuilder().place("room").synth("ann", "room", name="Ann")
        .synth("bob", "room", name="Bob", channels=("visual", "proprioceptive")).build()
    )  # fmt: skip
    script = Script({("Ann", 1, 1): "Hello?"})
    s = Session(script, max_microcycles=1)
    s.world = world
    s.synths["bob"] = s.synths["bob"].model_copy(update={"senses": ["visual", "proprioceptive"]})
    first = s.step()
    assert first.verdict.carried_speech == {}
