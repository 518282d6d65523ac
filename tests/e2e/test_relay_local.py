"""A one-item relay end to end on the embedded defaults, kept to one builder turn: a SQLite
file, a git workspace, the real verifier (ruff and pytest in the sandbox) and the real
llama.cpp server with Qwen2.5-Coder-1.5B (the builder's call and the verifier's). The run
then replays with no model and no checks run, and the workspace's git tree is the fold of
its log. What the model achieves is not asserted here; that is measured on HumanEval by
`python -m evals relay` (BENCHMARKS.md).

What a longer relay on this model does (two items, a retry each, escalations, batons and
verdicts paired with the builder's calls, the tree the fold of the log) is asserted on the
recorded run `tests/fixtures/runs/local_model_relay_two_items.jsonl` by
tests/integration/test_recorded_local_runs.py, which CI replays."""

from __future__ import annotations

import pytest

from actors import Client
from actors.relay.git_workspace import GitWorkspace
from actors.relay.recording import builder_stream, scheduler_stream, verifier_stream
from actors.relay.scheduler import SchedulerBehaviour
from actors.relay.workspace_files import workspace_snapshot
from actors.runtime.replay import replay_run
from actors.runtime.settings import Settings
from actors.runtime.shell import ActorShell
from events.effects import LlmCompleted, LlmFailed
from actors.relay.events import BatonPassed, EscalationRaised, TurnVerified

pytestmark = [pytest.mark.llm]

ROADMAP = """\
items:
  - title: Write slugify(text) in text_tools.py
    details: Lowercase the text, turn each run of characters that are not letters or digits into one "-", and strip "-" from both ends.
    acceptance:
      - slugify("Hello, World!") == "hello-world"
      - test_text_tools.py has a pytest test of slugify
"""


def test_one_relay_turn_on_the_local_model_replays_and_its_tree_is_its_log(tmp_path):
    (tmp_path / "ws").mkdir()
    (tmp_path / "roadmap.yaml").write_text(ROADMAP)
    settings = Settings.from_env(store_url=f"sqlite:///{tmp_path / 'chorus.db'}")
    with Client(settings=settings, start_ray=False) as chorus:
        handle = chorus.submit(
            "a small text toolkit",
            kind="relay",
            workspace=str(tmp_path / "ws"),
            roadmap=str(tmp_path / "roadmap.yaml"),
            max_retries=0,
            llm_params={"temperature": 0.0, "seed": 0, "max_tokens": 160},
        )
        result = handle.wait(timeout=1500)
        run_id = handle.run_id
        state = ActorShell(SchedulerBehaviour(), scheduler_stream(run_id), chorus.store).load().state
        events = [r.event for r in chorus.store.read_all(run_id=run_id)]
        builder_calls = [e for e in chorus.store.read_stream(builder_stream(run_id)) if isinstance(e, LlmCompleted)]
        checks = [e for e in chorus.store.read_stream(verifier_stream(run_id)) if type(e).__name__ == "ToolReturned"]
        report = replay_run(chorus.store, run_id)
    assert result.status == "completed", result
    assert state.status == "done" and state.passed + state.escalated == 1
    batons = [e for e in events if isinstance(e, BatonPassed)]
    [verdict] = [e for e in events if isinstance(e, TurnVerified)]
    assert len(batons) == len(builder_calls) == 1  # one turn: no retry
    assert len(checks) >= 2  # ruff and pytest ran on the turn
    escalations = [e for e in events if isinstance(e, EscalationRaised)]
    assert len(escalations) == state.escalated == (verdict.status != "PASSED")
    assert workspace_snapshot(tmp_path / "ws") == state.files  # the git working tree mirrors the log
    if verdict.status == "PASSED":  # and the checkpoint's commit holds it
        assert GitWorkspace(tmp_path / "ws").tree_files() == state.files
    assert report.ok, report.divergence and report.divergence.describe()
    assert report.llm_calls == len([e for e in events if isinstance(e, (LlmCompleted, LlmFailed))])
