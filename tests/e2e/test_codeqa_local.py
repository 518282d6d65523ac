"""A code question end to end on the embedded defaults: local Ray, a SQLite file and the real
local llama.cpp server with Qwen2.5-Coder-1.5B driving the orchestrator and its five tools.
Slow (several minutes): every step is a real completion on the CPU."""

from __future__ import annotations

import io

import pytest

from actors import Client
from actors.agent.policy import unwrap_answer
from actors.codeqa.cli import follow_question
from actors.codeqa.orchestrator import TOOLS
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


def test_the_orchestrator_answers_a_code_question_with_the_local_model(tmp_path):
    worker_path()
    repos = tmp_path / "repos"
    for rel, text in REPOS.items():
        (repos / rel).parent.mkdir(parents=True, exist_ok=True)
        (repos / rel).write_text(text)
    # The tool calls go through Ray with the model's timeout; a shared CPU can be slow.
    settings = Settings.from_env(store_url=f"sqlite:///{tmp_path / 'chorus.db'}", llm_timeout_s=1800)
    out, err = io.StringIO(), io.StringIO()
    with Client(settings=settings) as chorus:
        run = chorus.submit(
            "In the inventory repository, at what quantity does an item need to be reordered?",
            root=repos, agent="orchestrator", tools=list(TOOLS), max_iterations=6,
        )  # fmt: skip
        code = follow_question(run, out=out, err=err)
        result = run.result
        events = [r.event for r in chorus.events(run.run_id)]
    assert code == 0 and result.ok, err.getvalue()
    answer = unwrap_answer(result.answer)
    assert "12" in answer or "REORDER_POINT" in answer, answer
    assert out.getvalue().startswith(answer) and "<answer>" not in out.getvalue()
    called = [e.tool for e in events if e.type_name == "ToolReturned"]
    assert called and set(called) <= set(TOOLS)
    assert any(e.type_name == "ToolReturned" and "REORDER_POINT" in e.output for e in events)
    completions = [e for e in events if e.type_name == "LlmCompleted"]
    assert completions and all(e.completion_tokens > 0 for e in completions)
    assert all(e.run_id == run.run_id for e in events)
