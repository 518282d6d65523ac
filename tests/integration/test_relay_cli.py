"""`chorus relay` in this process, with a scripted model behind `provider_for`: a run with a
roadmap file shows live progress, `--show` reads it from the views, `chorus replay` finds it
identical with no live call; without a file the Orchestrator's call is recorded first; bad
input is one line, exit 2, and nothing written; `Client().submit(kind="relay")` runs one."""

from __future__ import annotations

import json

import pytest

from actors.cli.main import main
from actors.relay import prompts, session
from actors.relay.actor import RelayActor
from actors.relay.recording import orchestrator_stream, scheduler_stream
from actors.runtime.client import Client
from actors.testing.model import ScriptedProvider
from actors.runtime.settings import Settings
from actors.relay.events import RoadmapCompleted
from events.store import EventStore
from tests.integration.test_relay_run import COHERENT, MUL, RIGHT, WRONG_1

ROADMAP = "items:\n  - title: Write add(a, b) in calc_add.py\n    acceptance: [add(2, 3) == 5, with a test]\n"
PLANNED = json.dumps(
    {
        "items": [
            {
                "title": "Write mul(a, b) in calc_mul.py",
                "acceptance": ["mul(2, 3) == 6"],
            }
        ]
    }
)


def model(request) -> str:
    system = request.messages[0]["content"]
    if system == prompts.VERIFIER_SYSTEM:
        return COHERENT
    if system == prompts.BUILDER_SYSTEM:
        user = request.messages[-1]["content"]
        if "mul(a, b)" in user.split("\n")[0]:
            return MUL
        return RIGHT if "FAILED verification" in user else WRONG_1
    return PLANNED  # the orchestrator


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("CHORUS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("CHORUS_STORE_URL", raising=False)
    provider = ScriptedProvider(model)
    monkeypatch.setattr(session, "provider_for", lambda client: provider)
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "README.md").write_text("# arithmetic\n")
    return tmp_path, provider


def run_id_from(out: str) -> str:
    return next(line.split()[1] for line in out.splitlines() if line.startswith("relay "))


def test_a_relay_from_a_roadmap_file_shows_progress_replays_and_shows(env, capsys):
    tmp, provider = env
    (tmp / "roadmap.yaml").write_text(ROADMAP)
    assert (
        main(
            [
                "relay",
                "arithmetic",
                "--workspace",
                str(tmp / "ws"),
                "--roadmap",
                str(tmp / "roadmap.yaml"),
            ]
        )
        == 0
    )
    out, err = capsys.readouterr()
    run_id = run_id_from(out)
    assert "turn 1: item 1: Write add(a, b)" in err
    assert "turn 1: verifier: FAILED | defect (test, high)" in err
    assert "turn 2: item 1 (retry 1)" in err and "turn 2: verifier: PASSED" in err
    assert "files changed: calc_add.py, test_add.py" in err
    assert out.strip().endswith("1 of 1 roadmap items passed, 0 escalated")
    assert (tmp / "ws" / ".git").is_dir() and "a + b" in (tmp / "ws" / "calc_add.py").read_text()

    calls = provider.calls
    assert main(["replay", run_id]) == 0
    assert "identical" in capsys.readouterr().out and provider.calls == calls

    assert main(["relay", "--show", run_id]) == 0
    shown = capsys.readouterr().out
    assert "1. [passed] Write add(a, b) in calc_add.py" in shown
    assert "checkpoints (1):" in shown and "defects (1):" in shown and "resolved" in shown
    assert "escalations (0):" in shown
    assert main(["relay", "--show", run_id, "--json"]) == 0  # the same, as one object
    body = json.loads(capsys.readouterr().out)
    assert body["roadmap"] == [{"title": "Write add(a, b) in calc_add.py", "status": "passed"}]
    assert (len(body["checkpoints"]), len(body["defects"]), body["escalations"]) == (1, 1, [])
    assert body["defects"][0]["resolved"] is True


def test_without_a_roadmap_the_orchestrators_call_is_recorded_first(env, capsys):
    tmp, _ = env
    assert main(["relay", "multiply two numbers", "--workspace", str(tmp / "ws")]) == 0
    run_id = run_id_from(capsys.readouterr().out)
    with EventStore(Settings.from_env().store_url) as store:
        planned = [e.type_name for e in store.read_stream(orchestrator_stream(run_id))]
        assert planned == ["LlmRequested", "LlmCompleted"]
        done = [e for e in store.read_stream(scheduler_stream(run_id)) if isinstance(e, RoadmapCompleted)]
        assert done and done[0].passed == 1
    assert main(["replay", run_id]) == 0


@pytest.mark.parametrize(
    "args, message",
    [
        (["relay", "g", "--workspace", "MISSING"], "is not a folder"),
        (["relay", "g", "--workspace", "WS", "--roadmap", "BAD"], "items"),
        (["relay", "g", "--workspace", "WS", "--max-retries", "-1"], "--max-retries"),
        (["relay", "--show", "nosuchrun"], "nosuchrun"),
        (["relay", "g"], "--root DIR"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_nothing_written(env, capsys, args, message):
    tmp, provider = env
    (tmp / "bad.yaml").write_text("items: []\n")
    paths = {
        "MISSING": str(tmp / "missing"),
        "WS": str(tmp / "ws"),
        "BAD": str(tmp / "bad.yaml"),
    }
    assert main([paths.get(a, a) for a in args]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("chorus: error:") and message in err
    data = tmp / "data"
    if data.exists():  # --show opens the store to look: it must hold nothing
        with EventStore(Settings.from_env().store_url) as store:
            assert list(store.read_all()) == []
    assert not (tmp / "ws" / ".git").exists() and provider.calls == 0


def test_client_submit_runs_a_relay(env):
    tmp, provider = env
    (tmp / "roadmap.yaml").write_text(ROADMAP)
    with Client(settings=Settings.from_env(), start_ray=False, llm=provider) as client:
        handle = client.submit(
            "arithmetic",
            kind="relay",
            workspace=str(tmp / "ws"),
            roadmap=str(tmp / "roadmap.yaml"),
        )
        result = handle.wait(timeout=120)
    assert result.status == "completed", result
    assert result.answer == "1 of 1 roadmap items passed, 0 escalated"


def test_the_relay_actor_serves_a_run_in_process(env):
    """The Ray actor's class, called in this process (no Ray): it serves a planned run to its
    end, and serving it again appends nothing and calls nothing (resume from the log)."""
    tmp, provider = env
    (tmp / "roadmap.yaml").write_text(ROADMAP)
    settings = Settings.from_env()
    with Client(settings=settings, start_ray=False, llm=provider) as client:
        session.start_relay(client, "arithmetic", run_id="act1", workspace=tmp / "ws", roadmap=tmp / "roadmap.yaml")
    actor = RelayActor(settings, "act1", llm=provider)
    try:
        summary = actor.serve()
        assert (summary["status"], summary["passed"], summary["escalated"]) == ("done", 1, 0) and summary["tokens"] > 0
        calls = provider.calls
        version = actor.client.store.stream_version(scheduler_stream("act1"))
        actor.serve()
        assert provider.calls == calls and actor.client.store.stream_version(scheduler_stream("act1")) == version
        assert actor.client.run_result("act1").status == "completed"
    finally:
        actor.close()
