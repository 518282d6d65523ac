"""The machine's shared Ray head (actors.runtime.ray_head) through the real `chorus` command:
two runs in a row are served by one head, a job's workers get the folder and the variables of
the process that submitted it, and the head stops once nobody has used it for its idle time."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from actors.runtime import ray_head
from tests.support.sim_endpoint import serving

pytestmark = pytest.mark.ray

ROOT = Path(__file__).resolve().parents[2]
PORT = 6397  # a port of the test's own, not the default head's
AGENT = '''
import os
from actors.sdk import agent


@agent
def where(ctx, goal):
    return f"{ctx.llm(goal)} cwd={os.getcwd()} mark={os.environ.get('CHORUS_TEST_MARK')}"
'''


def chorus(args, cwd, env):
    done = subprocess.run([sys.executable, "-m", "actors.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_runs_share_one_head_with_their_own_folder_and_variables_and_it_stops_when_unused(tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "my_agent.py").write_text(AGENT)
    with serving(lambda request: "hello") as url:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CHORUS_", "RAY_ADDRESS"))}
        env.update(CHORUS_DATA_DIR=str(tmp_path / "data"), CHORUS_LLM_BASE_URL=url, CHORUS_LLM_MODEL="scripted",
                   CHORUS_RAY_PORT=str(PORT), CHORUS_RAY_IDLE_S="3", PYTHONPATH=str(ROOT))  # fmt: skip
        me = ray_head.users_dir(PORT) / str(os.getpid())  # this test uses the head until both runs are done
        me.parent.mkdir(parents=True, exist_ok=True)
        me.touch()
        first = chorus(["run", "hi", "--agent", "my_agent:where", "-q"], tmp_path / "mine", {**env, "CHORUS_TEST_MARK": "one"})
        head = json.loads(ray_head.note_path(PORT).read_text())
        second = chorus(["run", "hi", "--agent", "my_agent:where", "-q"], tmp_path / "mine", {**env, "CHORUS_TEST_MARK": "two"})
        again = json.loads(ray_head.note_path(PORT).read_text())
        me.unlink()
    assert f"hello cwd={tmp_path / 'mine'} mark=one" in first
    assert f"hello cwd={tmp_path / 'mine'} mark=two" in second  # each job its own variables
    assert again["pid"] == head["pid"] and again["python"] == sys.executable  # one head served both
    deadline = time.monotonic() + 120  # a hang detector: the watch checks every 2 s, then Ray drains
    while ray_head.note_path(PORT).exists() or ray_head._listening(PORT):
        assert time.monotonic() < deadline, "the shared head did not stop once unused"
        time.sleep(1)


def test_a_process_without_the_users_token_cannot_join_the_head(tmp_path):
    """The head listens on every interface: one that does not send this user's token (none, or
    another one) is refused; one with the token's path joins. The head is started by a process
    of its own: joining it switches a process's Ray to the head's token, and this one's other
    tests use a local Ray without one."""
    port = PORT + 1
    ours = {k: v for k, v in os.environ.items() if k.startswith("RAY_")}
    me = ray_head.users_dir(port) / str(os.getpid())  # this test uses the head until the probes end
    me.parent.mkdir(parents=True, exist_ok=True)
    me.touch()
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "CHORUS_"))}
    start = f"from actors.runtime import ray_head; print(ray_head.shared_head({port}, 20, ray_head.Path({str(tmp_path / 'head.log')!r})))"
    started = subprocess.run([sys.executable, "-c", start], env={**clean, "PYTHONPATH": str(ROOT)}, capture_output=True,
                             text=True, timeout=180)  # fmt: skip
    assert started.returncode == 0, started.stderr[-2000:]
    address = started.stdout.strip().splitlines()[-1]
    probe = "import ray, sys; ray.init(address=sys.argv[1], include_dashboard=False); print('JOINED')"
    said = {}
    try:
        for name, extra in (("another token", {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": "f" * 64}),
                            ("the token's path", ray_head.auth_env())):  # fmt: skip
            done = subprocess.run([sys.executable, "-c", probe, address], env={**clean, **extra}, capture_output=True,
                                  text=True, timeout=120)  # fmt: skip
            said[name] = "JOINED" in done.stdout
    finally:
        me.unlink()
        note = json.loads(ray_head.note_path(port).read_text()) if ray_head.note_path(port).exists() else {}
        if note.get("pid"):
            os.kill(int(note["pid"]), signal.SIGTERM)  # the watch stops its head
    assert said == {"another token": False, "the token's path": True}
    assert {k: v for k, v in os.environ.items() if k.startswith("RAY_")} == ours  # this process was left as it was
