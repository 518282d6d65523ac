"""Issue #17, secrets and the script runner: a script cannot read its caller's secrets through
/proc, no secret value reaches the event log (whatever printed it), and a script's output is
held in bounded memory however much it prints."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from actors.testing.model import ScriptedProvider
from actors.runtime.llm.types import LlmRequest
from actors.runtime.replay import replay_run
from actors.runtime.tool_context import ToolContext
from actors.tasks import tools
from actors.tasks.runner import prepare, serve, submit
from actors.tasks.tools import SCRIPT_POLICY
from actors.tools.sandbox import SandboxUnavailable, ready
from events.store import EventStore

SECRET = "sk-chorus-test-9d41c7ab3e"
NAME = "CHORUS_TEST_API_KEY"
ROOT = Path(__file__).parents[2]

# Everything a script could print of its ancestors' environments and its own.
SNOOP = (
    "env; tr '\\0' '\\n' < /proc/$PPID/environ; "
    "gp=$(awk '/^PPid:/ {print $2}' /proc/$PPID/status 2>/dev/null); "
    "[ -n \"$gp\" ] && tr '\\0' '\\n' < /proc/$gp/environ; "
    "for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f; done 2>/dev/null; true"
)

CHILD = """
import sys
from actors.tasks import tools
print(tools.RunScript(root=sys.argv[1]).execute(command=sys.argv[2]))
"""


@pytest.fixture(autouse=True)
def _bwrap():
    try:
        ready()
    except SandboxUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(f"CI needs the sandbox: {exc}")
        pytest.skip(str(exc))


def _in_a_process_holding_the_secret(workspace: Path, command: str) -> str:
    """Run the tool in a fresh process whose real environment (what /proc shows) holds a secret,
    as a Ray actor's does."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(workspace), command],
        env={**os.environ, NAME: SECRET}, cwd=ROOT, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    return done.stdout


def test_a_script_sees_no_other_processes_environment(tmp_path):
    output = _in_a_process_holding_the_secret(tmp_path, SNOOP)
    result = json.loads(output)
    assert result["exit_code"] == 0 and "PATH=" in result["stdout"]
    assert SECRET not in output


def test_the_scripts_own_environment_is_the_allow_list(tmp_path):
    output = _in_a_process_holding_the_secret(tmp_path, "env | cut -d= -f1 | sort")
    names = set(json.loads(output)["stdout"].split())
    assert SECRET not in output and NAME not in names
    assert {"PATH", "HOME", "TMPDIR"} <= names <= {"PATH", "HOME", "TMPDIR", "PWD", *SCRIPT_POLICY.env_allow}


def _db_bytes(url_path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in url_path.parent.glob(url_path.name + "*"))


def test_no_secret_reaches_the_log_from_tools_errors_or_the_model(monkeypatch, tmp_path):
    monkeypatch.setenv(NAME, SECRET)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text(f"the deploy key is {SECRET}\n")
    db = tmp_path / "chorus.db"
    program = (
        "(list "
        f'(system:run_script "cat notes.txt; echo $PPID; {SNOOP.replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34))}") '
        '(system:read_files "notes.txt") '
        f'(system:run_script "ls" :timeout "{SECRET}") '
        '(call summarize-file :path "notes.txt"))'
    )
    reply = f"The notes hold the deploy key {SECRET}."
    with EventStore(f"sqlite:///{db}") as store:
        start = prepare(program, workspace=str(workspace), model="m")
        submit(store, "leak", start)
        provider = ScriptedProvider([reply])
        result = serve(store, "leak", start, provider)
        assert provider.calls == 1 and SECRET in provider.requests[0].messages[-1]["content"]  # live: the real thing
        recorded = [r.event for r in store.read_all(run_id="leak")]
        report = replay_run(store, "leak")
    assert result.status == "COMPLETE", result
    assert report.ok, report.divergence.describe()
    dumped = "\n".join(e.model_dump_json() for e in recorded)
    for what in ("ToolReturned", "LlmRequested", "LlmCompleted", "RunSubmitted", "RunCompleted"):
        assert any(e.type_name == what and f"[REDACTED:{NAME}]" in e.model_dump_json() for e in recorded), what
    failed = [e for e in recorded if e.type_name == "ToolReturned" and not e.ok]
    assert failed and f"[REDACTED:{NAME}]" in failed[0].error.message  # the tool error named it
    assert SECRET not in dumped
    assert SECRET.encode() not in _db_bytes(db)


def test_a_tools_own_model_calls_are_recorded_redacted(monkeypatch, tmp_path):
    monkeypatch.setenv(NAME, SECRET)
    db = tmp_path / "tool.db"
    context = ToolContext(
        run_id="r1", tool="hyde", store_url=f"sqlite:///{db}",
        provider=ScriptedProvider([f"one {SECRET}", f"two {SECRET}", f"three {SECRET}"]),
    )
    ask = LlmRequest(model="m", messages=[{"role": "user", "content": f"say {SECRET}"}])
    assert SECRET in context.complete(ask).content  # the tool itself gets the real answer
    assert len(context.complete_many([ask, ask])) == 2
    events = context.store.read_stream(context.stream_id)
    context.store.close()
    assert len(events) == 6 and SECRET not in "".join(e.model_dump_json() for e in events)
    assert len({e.request_hash for e in events}) == 1  # requests and completions still pair
    assert SECRET.encode() not in _db_bytes(db)


def test_a_script_printing_50_mb_is_held_in_bounded_memory(tmp_path):
    size = 50_000_000
    tracemalloc.start()
    try:
        output = tools.RunScript(root=str(tmp_path)).execute(command=f"head -c {size} /dev/zero | tr '\\0' a")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < size // 10  # kept: the cap and a chunk; never the output
    result = json.loads(output)
    assert result["exit_code"] == 0
    assert result["stdout"].startswith("a" * tools.MAX_OUTPUT_CHARS)
    assert result["stdout"].endswith(f"({size - tools.MAX_OUTPUT_CHARS} more bytes cut, {size} in all)")


def test_a_hanging_script_with_output_still_times_out_and_is_killed(tmp_path):
    output = tools.RunScript(root=str(tmp_path)).execute(command="echo started; yes > /dev/null", timeout=1)
    result = json.loads(output)
    assert result["timed_out"] and result["stdout"] == "started\n"
