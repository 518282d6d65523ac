"""The `chorus` command as a person uses it: output, exit codes, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from actors.runtime.cli_dialect import EVENT_FIELDS
from events.store import EventStore
from tests.support import recording
from tests.support.cli import chorus


@pytest.fixture
def env(tmp_path):
    return {
        "CHORUS_DATA_DIR": str(tmp_path / "data"),
        "CHORUS_STORE_URL": f"sqlite:///{tmp_path / 'chorus.db'}",
    }


def record_run(store_url: str, root, run_id: str = "abc123") -> None:
    with EventStore(store_url) as store:
        recording.record_run(store, root, run_id=run_id)


def positions(store_url: str) -> int:
    with EventStore(store_url) as store:
        return store.max_position()


def test_events_and_runs_show_a_recorded_run(env, tmp_path):
    record_run(env["CHORUS_STORE_URL"], tmp_path)
    out = chorus("events", "abc123", "--json", env=env)
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert rows[0]["type"] == "RunSubmitted" and rows[-1]["type"] == "RunCompleted"
    assert [r["position"] for r in rows] == sorted(r["position"] for r in rows)
    assert list(rows[0]) == list(EVENT_FIELDS)  # the one event shape (docs/reference.md)
    assert all(r["run_id"] == "abc123" for r in rows)
    tool = next(r for r in rows if r["type"] == "ToolReturned")
    assert "ALPHA-7" in tool["data"]["output"]

    text = chorus("events", "abc123", env=env)
    assert "StepDecided" in text.stdout and "search_files" in text.stdout

    listed = chorus("runs", env=env)
    assert listed.returncode == 0
    header, row = listed.stdout.splitlines()
    assert header.split() == ["RUN", "SUBMITTED", "STATUS", "KIND", "GOAL"]
    assert row.split()[0] == "abc123" and row.split()[3:5] == ["completed", "react"]


def test_unknown_run_id_is_one_line_and_writes_nothing(env, tmp_path):
    record_run(env["CHORUS_STORE_URL"], tmp_path)
    before = positions(env["CHORUS_STORE_URL"])
    out = chorus("events", "nope", env=env)
    assert out.returncode == 2
    assert out.stderr.strip() == "chorus: error: no run with id 'nope'"
    assert positions(env["CHORUS_STORE_URL"]) == before


def test_unreachable_store_is_one_line(env):
    env = {**env, "CHORUS_STORE_URL": "postgresql://postgres@127.0.0.1:1/nowhere"}
    out = chorus("runs", env=env)
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1
    assert out.stderr.startswith("chorus: error: cannot open event store")


def test_llm_endpoint_down_fails_before_anything_is_written(env, tmp_path):
    env = {**env, "CHORUS_LLM_BASE_URL": "http://127.0.0.1:9/v1"}
    out = chorus("run", "What is here?", "--root", str(tmp_path), env=env)
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "unreachable" in out.stderr
    assert positions(env["CHORUS_STORE_URL"]) == 0


def test_missing_root_folder_is_one_line(env, tmp_path):
    env = {**env, "CHORUS_LLM_BASE_URL": "http://127.0.0.1:9/v1"}
    out = chorus("run", "What is here?", "--root", str(tmp_path / "missing"), env=env)
    assert out.returncode == 2
    assert out.stderr.strip() == f"chorus: error: root folder {tmp_path / 'missing'} does not exist"
    assert positions(env["CHORUS_STORE_URL"]) == 0


def test_no_runs_yet(env):
    out = chorus("runs", env=env)
    assert (out.returncode, out.stdout.strip()) == (0, "no runs yet")


def test_debugging_commands_on_a_recorded_run(env, tmp_path):
    record_run(env["CHORUS_STORE_URL"], tmp_path)
    before = positions(env["CHORUS_STORE_URL"])

    log = chorus("log", "abc123", env=env)
    assert log.returncode == 0 and "search_files" in log.stdout and "ALPHA-7" in log.stdout

    state = chorus("state", "agent:abc123", "--at", "1", env=env)
    body = json.loads(state.stdout)
    assert (body["version"], body["state"]["status"]) == (1, "running")

    replay = chorus("replay", "abc123", env=env)
    assert replay.returncode == 0 and "identical" in replay.stdout and "0 live calls" in replay.stdout

    diff = chorus("diff", "abc123", "abc123", env=env)
    assert diff.returncode == 0 and "no difference" in diff.stdout

    # --json on every verb that reads: the same facts as the text, as JSON
    events = [json.loads(line) for line in chorus("events", "abc123", "--json", env=env).stdout.splitlines()]
    assert [json.loads(line) for line in chorus("log", "abc123", "--json", env=env).stdout.splitlines()] == events
    state = json.loads(chorus("state", "agent:abc123", "--at", "1", "--json", env=env).stdout)
    assert (state["stream_id"], state["version"], state["state"]["status"]) == ("agent:abc123", 1, "running")
    verdict = chorus("replay", "abc123", "--json", env=env)
    body = json.loads(verdict.stdout)
    assert verdict.returncode == 0 and body["identical"] is True and body["divergence"] is None
    assert body["live_calls"] == 0 and body["events"] > 0 and body["llm_calls"] >= 1
    compared = json.loads(chorus("diff", "abc123", "abc123", "--json", env=env).stdout)
    assert compared["identical"] is True and compared["a"]["first_difference"] is None
    assert compared["a"]["counts"] == compared["b"]["counts"] and compared["shared"] > 0
    [listed] = [json.loads(line) for line in chorus("runs", "--json", env=env).stdout.splitlines()]
    assert (listed["run_id"], listed["status"]) == ("abc123", "completed")

    exported = chorus("export", "abc123", "--out", str(tmp_path / "f.jsonl"), env=env)
    assert exported.returncode == 0
    assert len((tmp_path / "f.jsonl").read_text().splitlines()) == before + 1  # the events, and the seal
    assert positions(env["CHORUS_STORE_URL"]) == before  # none of these writes to the log


@pytest.mark.parametrize(
    "args, message",
    [
        (("replay", "nope"), "chorus: error: no run with id 'nope'"),
        (("log", "nope"), "chorus: error: no run with id 'nope'"),
        (("state", "agent:nope"), "chorus: error: no stream with id 'agent:nope'"),
        (("state", "agent:abc123", "--at", "999"), "outside"),
        (("diff", "abc123", "nope"), "chorus: error: no run with id 'nope'"),
        (("replay", "--fixture", "/no/such/file.jsonl"), "chorus: error: cannot read fixture"),
        (("replay", "--fixture", "NEWER"), "newer than this code"),
    ],
)
def test_debugging_commands_refuse_bad_input_in_one_line(env, tmp_path, args, message):
    fixture = Path(__file__).parents[1] / "fixtures" / "runs" / "scripted_search_read_answer.jsonl"
    rows = [json.loads(line) for line in fixture.read_text().splitlines()]
    rows = [{k: v for k, v in r.items() if k != "digest"} for r in rows if "seal" not in r]  # unsealed
    rows[1]["schema_version"] = 7  # written by a future version of the code
    newer = tmp_path / "newer.jsonl"
    newer.write_text("\n".join(json.dumps(r) for r in rows))
    args = tuple(str(newer) if a == "NEWER" else a for a in args)
    record_run(env["CHORUS_STORE_URL"], tmp_path)
    before = positions(env["CHORUS_STORE_URL"])
    out = chorus(*args, env=env)
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1 and message in out.stderr
    assert positions(env["CHORUS_STORE_URL"]) == before


@pytest.mark.parametrize(
    "args, message",
    [
        (("run", ""), "chorus: error: the goal is empty"),
        (("run", "x", "--max-iterations", "0"), "chorus: error: max_iterations must be at least 1, not 0"),
        (("run", "x", "--max-llm-calls", "-1"), "chorus: error: budget max_llm_calls must be positive, not -1"),
    ],
)
def test_bad_run_arguments_are_one_line_and_write_nothing(env, tmp_path, args, message):
    out = chorus(*args, "--root", str(tmp_path), env=env)
    assert (out.returncode, out.stderr.strip()) == (2, message)
    assert positions(env["CHORUS_STORE_URL"]) == 0


def test_fork_with_an_edit_refuses_bad_input_in_one_line_and_writes_nothing(env, tmp_path):
    """`chorus fork --completion FILE | --prompt FILE` (actors.agent.fork_edit): what it refuses
    before anything runs (a valid edit continues live: tests/integration/api/ make them)."""
    env = {**env, "CHORUS_LLM_BASE_URL": "http://127.0.0.1:9/v1"}  # had it got that far: no model, one line
    record_run(env["CHORUS_STORE_URL"], tmp_path)
    with EventStore(env["CHORUS_STORE_URL"]) as store:
        records = list(store.read_all(run_id="abc123"))
    call = next(r for r in records if r.event.type_name == "LlmRequested")
    step = next(r.position for r in records if r.event.type_name == "StepDecided")
    own = tmp_path / "own.json"
    own.write_text(json.dumps(call.event.messages))  # a JSON list of messages: the call's own prompt
    text = tmp_path / "text.txt"
    text.write_text("Step 2 of 10.")
    before = positions(env["CHORUS_STORE_URL"])
    for args, message in (
        (("--prompt", str(own)), "the edited prompt is the call's own prompt"),
        (("--prompt", str(text), "--at", str(step)), f"position {step} is not an LLM call of run abc123's agent"),
        (("--completion", str(text), "--prompt", str(own)), "not allowed with argument"),
        (("--prompt", str(tmp_path / "missing.json")), "cannot read --prompt "),
    ):
        at = () if "--at" in args else ("--at", str(call.position))
        out = chorus("fork", "abc123", *at, *args, env=env)
        assert out.returncode == 2, (args, out.stderr)
        assert len(out.stderr.strip().splitlines()) == 1 and message in out.stderr, (args, out.stderr)
    assert positions(env["CHORUS_STORE_URL"]) == before
