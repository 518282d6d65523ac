"""A code question through the runtime on a real local Ray and SQLite file, with a scripted
model: the orchestrator and its five tools as Ray actors, the tool's own model calls
recorded in its stream, the CLI's rendering of the run, and replay of it. The tool runs
seed 003's HyDE here (the test Ray instance's workers choose it: tests/support/ray_env.py),
which the scripted model plays; the default ranking, hybrid, is test_codeqa_hybrid_default's."""

from __future__ import annotations

import io

import pytest

from actors.codeqa.cli import follow_question
from actors.codeqa.orchestrator import TOOLS
from actors.runtime.replay import replay_run
from tests.support import codeqa_llm, fake_llm

pytestmark = pytest.mark.ray


def test_a_code_question_runs_on_ray_and_prints_answer_and_sources(client, tmp_path):
    repos = codeqa_llm.make_repos(tmp_path / "repos")
    out, err = io.StringIO(), io.StringIO()
    with client(codeqa_llm.orchestrator) as c:
        run = c.submit("How is a discount code applied?", root=repos, kind="orchestrator", tools=list(TOOLS))
        code = follow_question(run, out=out, err=err)
        records = c.events(run.run_id)
        report = replay_run(c.store, run.run_id)

    assert code == 0
    assert out.getvalue() == (
        f"{codeqa_llm.ANSWER}\n\nEvidence: shop/shop/billing.py:9: return round(total * 0.9, 2)"
        "\n\nRelied on:\n  shop/shop/billing.py lines 6-10\n  shop/shop/cart.py line 4\n"
    )
    shown = err.getvalue()
    calls = [line.strip() for line in shown.splitlines() if line.strip().startswith("→")]
    assert calls == [
        "→ list_available_repositories()",
        '→ semantic_file_search(query="How is a discount code applied?")',
        '→ read_code(path="shop/shop/billing.py", start_line=6, end_line=10)',
    ]
    assert "← 2 repositories: notes, shop" in shown and "<answer>" not in out.getvalue()

    streams = {r.event.stream_id for r in records}
    assert streams == {f"run:{run.run_id}", f"agent:{run.run_id}", f"tool:semantic_file_search:{run.run_id}"}
    inner = [r.event for r in records if r.event.stream_id.startswith("tool:")]
    assert [e.type_name for e in inner] == ["LlmRequested", "LlmCompleted"] * 2  # HyDE, keywords
    assert inner[2].response_schema["properties"]["keywords"]["maxItems"] == 8
    assert report.ok, report.divergence.describe()
    assert (report.llm_calls, report.tool_calls) == (4, 3)


def test_a_run_that_does_not_answer_exits_1_with_its_error(client, tmp_path):
    repos = codeqa_llm.make_repos(tmp_path / "repos")
    out, err = io.StringIO(), io.StringIO()
    with client(fake_llm.searches_forever) as c:  # calls a tool the orchestrator does not have
        run = c.submit("How?", root=repos, kind="orchestrator", tools=list(TOOLS), max_iterations=2)
        code = follow_question(run, quiet=True, out=out, err=err)
    assert code == 1 and out.getvalue() == ""
    assert err.getvalue().startswith(f"chorus: run {run.run_id} failed: ")
