"""Replay verifies what it serves: a recorded request whose text was edited (its hash kept) is
refused by replay and flagged by `chorus audit verify`; a run with nothing to re-execute is an
error, not "identical"."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from actors.runtime.llm.types import RecordEdited
from actors.runtime.replay import load_fixture, replay_run
from actors.runtime.replay.fixtures import sealed_text
from actors.runtime.run import RunLifecycle, Submit, run_stream
from actors.runtime.shell import ActorShell
from events.store import EventStore

FIXTURE = Path(__file__).parents[1] / "fixtures" / "runs" / "scripted_search_read_answer.jsonl"


def edited_fixture(tmp_path: Path, call: int = 1) -> Path:
    """The fixture with LLM call `call`'s system prompt changed; its stored hash kept, and the
    file resealed, as a forger would, so that only the request hash can tell."""
    rows = [json.loads(line) for line in FIXTURE.read_text().splitlines() if line.strip()]
    rows = [r for r in rows if "seal" not in r]
    requested = [r for r in rows if r["type"] == "LlmRequested"]
    messages = requested[call - 1]["payload"]["messages"]
    messages[0]["content"] = messages[0]["content"].replace("You answer", "You (edited) answer", 1)
    assert "(edited)" in messages[0]["content"]
    out = tmp_path / "edited.jsonl"
    out.write_text(sealed_text(rows))
    return out


def chorus(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CHORUS_DATA_DIR": str(tmp_path), "CHORUS_STORE_URL": f"sqlite:///{tmp_path / 'c.db'}"}
    return subprocess.run([sys.executable, "-m", "actors.cli", *args], capture_output=True, text=True, timeout=120, env=env)


def test_an_edited_prompt_with_its_hash_kept_fails_replay(tmp_path: Path) -> None:
    store, run_id = load_fixture(edited_fixture(tmp_path))
    with store:
        report = replay_run(store, run_id)
    assert not report.ok
    assert "the log was edited" in report.divergence.describe()
    # the untouched fixture still replays
    store, run_id = load_fixture(FIXTURE)
    with store:
        assert replay_run(store, run_id).ok


def test_the_cli_replay_exits_non_zero_on_an_edited_log(tmp_path: Path) -> None:
    out = chorus(tmp_path, "replay", "--fixture", str(edited_fixture(tmp_path, call=2)))
    assert out.returncode != 0
    assert "edited" in out.stdout + out.stderr


def test_audit_verify_flags_the_edited_request(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    store = EventStore(url)
    with store:
        load_fixture(edited_fixture(tmp_path), store=store)
    flagged = chorus(tmp_path, "audit", "verify")
    assert flagged.returncode == 1
    lines = flagged.stdout.splitlines()
    assert len([line for line in lines if line.startswith("EDITED run ")]) == 1
    assert lines[-1] == "3 recorded request(s) checked, 1 edited"
    clean_dir = tmp_path / "clean"
    clean_dir.mkdir()
    store = EventStore(f"sqlite:///{clean_dir / 'c.db'}")
    with store:
        load_fixture(FIXTURE, store=store)
    clean = chorus(clean_dir, "audit", "verify")
    assert clean.returncode == 0 and clean.stdout.strip().endswith("3 recorded request(s) checked, 0 edited")


def test_record_edited_is_a_divergence_with_its_own_reason() -> None:
    error = RecordEdited(2, "a" * 64, "b" * 64).error
    assert (error.type, error.reason) == ("replay_divergence", "edited_record")
    assert "the log was edited" in error.message


def test_a_run_with_nothing_to_re_execute_is_not_identical(tmp_path: Path) -> None:
    store = EventStore("memory://")
    with store:
        lifecycle = ActorShell(RunLifecycle(), run_stream("empty"), store, run_id="empty").load()
        lifecycle.handle(Submit(key="submit", goal="g", kind="react", params={}))
        report = replay_run(store, "empty")
    assert not report.ok and "nothing to re-execute" in report.divergence.describe()


@pytest.mark.parametrize("call", [1, 3])
def test_each_edited_call_is_refused(tmp_path: Path, call: int) -> None:
    store, run_id = load_fixture(edited_fixture(tmp_path, call=call))
    with store:
        report = replay_run(store, run_id)
    assert not report.ok and "edited" in report.divergence.describe()
