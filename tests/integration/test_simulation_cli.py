"""`chorus sim` as a user runs it, in a fresh process: synths talk to an OpenAI-compatible
endpoint over HTTP (a scripted mind behind it), live progress names who did what, and
`replay`, `fork --at CYCLE` and `diff` work on the session."""

from __future__ import annotations

import pytest

from tests.integration.test_simulation import LIGHTHOUSE
from tests.support.cli import chorus
from tests.support.sim_endpoint import serving


@pytest.fixture
def env(tmp_path):
    with serving() as url:
        yield {"CHORUS_DATA_DIR": str(tmp_path), "CHORUS_LLM_BASE_URL": url, "CHORUS_STORE_URL": ""}


def new_session(env) -> str:
    done = chorus("sim", "new", str(LIGHTHOUSE), env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()[0].split()[1]


@pytest.mark.parametrize("where", ["--in-process", "ray"])
def test_sim_step_shows_live_progress_and_the_session_replays(env, where):
    run_id = new_session(env)
    args = ["sim", "step", run_id, "--cycles", "2"] + ([where] if where != "ray" else [])
    done = chorus(*args, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "cycle 1 committed" in done.stderr and "cycle 2 committed" in done.stderr
    assert "Thomas:" in done.stderr  # each synth's chosen action, by name
    assert done.stdout.strip().endswith("2 of 2 cycle(s) committed, now at cycle 2")
    replay = chorus("replay", run_id, env=env)
    assert replay.returncode == 0 and "identical" in replay.stdout and "0 live calls" in replay.stdout


def test_fork_at_a_cycle_then_diff(env):
    run_id = new_session(env)
    assert chorus("sim", "step", run_id, "--cycles", "2", "--in-process", "-q", env=env).returncode == 0
    fork = chorus("fork", run_id, "--at", "1", env=env)
    assert fork.returncode == 0, fork.stderr
    assert f"forked from {run_id} at cycle 1" in fork.stdout
    new = fork.stdout.split()[1]
    shown = chorus("sim", "show", new, env=env)
    assert shown.returncode == 0 and ", cycle 1," in shown.stdout
    diff = chorus("diff", run_id, new, env=env)
    assert diff.returncode == 0, diff.stderr
    bad = chorus("fork", run_id, "--at", "7", env=env)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "cycle 7" in bad.stderr
