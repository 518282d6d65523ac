"""An interrupted run ends: Ctrl-C or SIGTERM on `chorus task` cancels the run (RunFailed,
`cancelled`), kills the script it was running, and exits 130; `RunHandle.cancel` stops an
agent run's Ray actor."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from actors import Client
from actors.agent.actor import agent_stream
from actors.testing.model import ScriptedProvider
from actors.runtime.settings import Settings
from actors.tasks.workflow import task_stream
from events.store import EventStore
from tests.support import fake_llm

pytestmark = pytest.mark.ray


def running(marker: str) -> bool:
    """Whether a process whose command line holds `marker` is running (scripts may run in a
    PID namespace of their own, so they are found by what they run, not by `$$`)."""
    found = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True, check=False)
    return found.stdout.strip() != ""


def _terminal_signals() -> None:
    """In the child: Ctrl-C and SIGQUIT as a terminal's foreground command gets them. A suite
    started in the background by a non-interactive shell (`bash scripts/test.sh &`) runs with
    both ignored, which its children inherit; Python then never turns SIGINT into
    KeyboardInterrupt, and `chorus` rightly keeps running, as a background job should."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def stacks(pid: int) -> str:
    """Every thread's Python stack in process `pid` (py-spy, a test dependency), for a hang."""
    spy = Path(sys.executable).with_name("py-spy")
    try:
        found = subprocess.run([str(spy), "dump", "--pid", str(pid)], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"(py-spy failed: {e})"
    return found.stdout + found.stderr


def wait_for(check, proc: subprocess.Popen | None = None, what: str = "", limit: float = 180) -> None:
    deadline = time.monotonic() + limit  # a safety net for a hung test, not a measurement
    while not check():
        if proc is not None and proc.poll() is not None:
            pytest.fail(f"chorus ended before {what}: {proc.stderr.read()}")
        assert time.monotonic() < deadline, f"never {what}"
        time.sleep(0.1)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupted_task_is_cancelled_its_script_killed_and_the_exit_is_130(tmp_path, sig):
    started = tmp_path / "started"
    marker = f"sleep 3{os.getpid() % 1000:03d}{int(sig)}7"  # this test's script, and no other process
    env = {
        "CHORUS_DATA_DIR": str(tmp_path / "data"),
        "CHORUS_STORE_URL": f"sqlite:///{tmp_path / 'chorus.db'}",
        "CHORUS_LLM_BASE_URL": "http://127.0.0.1:9/v1",
    }
    workflow = f'(system:run_script "touch {started}; {marker}" :timeout 600)'
    proc = subprocess.Popen(
        [sys.executable, "-m", "actors.cli", "task", workflow, "--workspace", str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, **env},
        preexec_fn=_terminal_signals,
    )  # fmt: skip
    try:
        wait_for(lambda: started.exists() and running(marker), proc, "started the script")
        proc.send_signal(sig)
        try:
            out, err = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:  # a hang: say where
            pytest.fail(f"chorus did not end within 120 s of the signal; its stacks:\n{stacks(proc.pid)}")
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    run_id = out.splitlines()[0].split()[1]
    assert err.strip().splitlines()[-1] == f"chorus: run {run_id} cancelled", err
    assert not running(marker)  # the script's process went with the run
    with EventStore(env["CHORUS_STORE_URL"]) as store:
        lifecycle = store.read_stream(f"run:{run_id}")
        workflow_types = [e.type_name for e in store.read_stream(task_stream(run_id))]
    assert [e.type_name for e in lifecycle] == ["RunSubmitted", "RunStarted", "RunFailed"]
    assert lifecycle[-1].error.type == "cancelled"
    assert workflow_types[-1] == "ToolCalled"  # the cut-off call's result was not recorded


def test_cancelling_an_agent_run_records_it_and_kills_its_actor(ray_local, tmp_path):
    ray = ray_local
    fake_llm.make_repo(tmp_path)
    settings = Settings.from_env(data_dir=tmp_path / "data", store_url=f"sqlite:///{tmp_path / 'chorus.db'}")
    with Client(settings=settings, llm=ScriptedProvider(fake_llm.slow_reader)) as c:
        run = c.submit("Read the notes line by line", root=tmp_path, max_iterations=12)
        wait_for(lambda: c.store.stream_version(agent_stream(run.run_id)) >= 4, what="got going")
        assert ray.get_actor(agent_stream(run.run_id)) is not None
        result = run.cancel()
        again = c.cancel(run.run_id)  # idempotent
        ended = run.wait(timeout=120)
        lifecycle = [e.type_name for e in c.store.read_stream(f"run:{run.run_id}")]
    assert result.status == "failed" and result.error.type == "cancelled"
    assert again == result and ended == result  # the actor's death recorded nothing more
    assert lifecycle == ["RunSubmitted", "RunStarted", "RunFailed"]
    with pytest.raises(ValueError):
        ray.get_actor(agent_stream(run.run_id))
