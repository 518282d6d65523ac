"""Temporal's replay-test pattern: every recorded run under tests/fixtures/runs is replayed
with today's code; a change that makes an old log diverge fails the build.

Record a new fixture: run a goal, then `chorus export RUN_ID --out tests/fixtures/runs/NAME.jsonl`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from actors.runtime.replay import load_fixture
from actors.runtime.replay import replay_run

FIXTURES = sorted((Path(__file__).parents[1] / "fixtures" / "runs").glob("*.jsonl"))


def test_there_are_fixtures():
    assert len(FIXTURES) >= 3


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_recorded_run_replays_identically(path):
    store, run_id = load_fixture(path)
    with store:
        report = replay_run(store, run_id)
    assert report.ok, report.divergence.describe()
    assert report.events > 0 and report.llm_calls > 0


def test_cli_replays_a_fixture_and_reports_counts(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "actors.cli", "replay", "--fixture", str(FIXTURES[0])],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "CHORUS_DATA_DIR": str(tmp_path), "CHORUS_STORE_URL": f"sqlite:///{tmp_path / 'x.db'}"},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "identical" in out.stdout and "0 live calls" in out.stdout
    # It names what it replayed: the one agent stream of that run.
    store, run_id = load_fixture(FIXTURES[0])
    with store:
        streams = replay_run(store, run_id).streams
    assert len(streams) == 1 and f"events in stream {streams[0]}, " in out.stdout
    assert not (tmp_path / "x.db").exists()  # replaying a fixture writes nothing
