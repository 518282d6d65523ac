"""A code question end to end on the embedded defaults, kept to one real call: local Ray, a
SQLite file and the real local llama.cpp server with Qwen2.5-Coder-1.5B driving the
orchestrator and its five tools, with one iteration (the orchestrator must answer at once),
followed as `chorus ask` follows it; then the run replays with no model.

A longer code question on this model (a search, reads, then the answer from what the tools
showed) is asserted on the recorded run
tests/fixtures/runs/local_model_codeqa_cipher_question.jsonl by
tests/integration/test_recorded_local_runs.py, which CI replays."""

from __future__ import annotations

import io

import pytest

from actors import Client
from actors.agent.policy import unwrap_answer
from actors.codeqa.cli import follow_question
from actors.codeqa.orchestrator import TOOLS
from actors.runtime.replay import replay_run
from actors.runtime.settings import Settings
from tests.support.ray_env import worker_path

pytestmark = [pytest.mark.llm, pytest.mark.ray]

REPOS = {
    "inventory/README.md": "# inventory\nStock levels for a small warehouse.\n",
    "inventory/inventory/items.py": (
        "from dataclasses import dataclass\n\n\n@dataclass\nclass Item:\n    name: str\n    quantity: int\n"
    ),
    "inventory/inventory/stock.py": (
        '"""Stock levels and when to reorder."""\n\n'
        "REORDER_POINT = 12\n\n\n"
        "def needs_reorder(item):\n"
        '    """True when the item\'s quantity has fallen to the reorder point."""\n'
        "    return item.quantity <= REORDER_POINT\n"
    ),
    "website/README.md": "# website\nThe shop's web pages.\n",
    "website/pages/index.html": "<h1>Welcome</h1>\n",
}


def test_the_orchestrator_asks_the_local_model_once_and_replays(tmp_path):
    worker_path()
    repos = tmp_path / "repos"
    for rel, text in REPOS.items():
        (repos / rel).parent.mkdir(parents=True, exist_ok=True)
        (repos / rel).write_text(text)
    settings = Settings.from_env(store_url=f"sqlite:///{tmp_path / 'chorus.db'}")
    out, err = io.StringIO(), io.StringIO()
    with Client(settings=settings) as chorus:
        run = chorus.submit(
            "In the inventory repository, at what quantity does an item need to be reordered?",
            root=repos, kind="orchestrator", tools=list(TOOLS), max_iterations=1,
            llm_params={"temperature": 0.0, "max_tokens": 96},
        )  # fmt: skip
        code = follow_question(run, out=out, err=err)
        result = run.result
        events = [r.event for r in chorus.events(run.run_id)]
        report = replay_run(chorus.store, run.run_id)
    started = next(e for e in events if e.type_name == "AgentStarted")
    assert set(TOOLS) <= {t.name for t in started.tools}
    [completion] = [e for e in events if e.type_name in ("LlmCompleted", "LlmFailed")]
    assert completion.type_name == "LlmCompleted" and completion.completion_tokens > 0
    if result.ok:  # printed as `chorus ask` prints it: the answer, unwrapped
        answer = unwrap_answer(result.answer)
        assert code == 0 and out.getvalue().startswith(answer) and "<answer>" not in out.getvalue()
        assert "Relied on: no file was read" in out.getvalue()  # the only step answered
    else:  # the verify step refused the answer, and one iteration was all there was
        assert code == 1 and result.error.type == "iteration_limit", err.getvalue()
        assert f"run {run.run_id} failed" in err.getvalue()
    assert all(e.run_id == run.run_id for e in events)
    assert report.ok and report.llm_calls == 1, report.divergence and report.divergence.describe()
