"""One budget per run on a real local Ray and a real SQLite file, with scripted models: every
workload (react, code question, researcher, task workflow) with a budget of N calls makes at
most N, counted from the log, the tools' own calls included; the run fails with a structured
`budget_exhausted` error and replays; parallel map workers on Ray cannot overshoot the run's
ledger actor together; a completed run's totals are the audit view's."""

from __future__ import annotations

import time

import pytest

from actors import Client
from actors.codeqa.orchestrator import TOOLS
from actors.runtime.budget import RayLedger, ledger_from_log
from actors.runtime.ledger import BUDGET_EXHAUSTED, BudgetExhausted
from actors.testing.model import ScriptedProvider
from actors.runtime.llm.types import LlmRequest, LlmResult
from actors.runtime.replay import replay_run
from actors.runtime.run import RunLifecycle, Submit, run_stream
from actors.runtime.shell import ActorShell
from actors.runtime.tool_context import ToolContext
from events.runs import Budget
from projections.audit import AuditTrail
from tests.support import codeqa_llm, fake_llm
from tests.support.budget_scripts import map_step, no_repo_researcher, slow_orchestrator
from tests.support.task_scripts import EXAMPLE, director_evaluator_script

pytestmark = pytest.mark.ray


def calls_in_log(c: Client, run_id: str) -> int:
    return sum(r.event.type_name == "LlmRequested" for r in c.store.read_all(run_id=run_id))


WORKLOADS = {
    # name: (script, submit options); each would make more calls than its budget allows
    "react": (fake_llm.never_answers, {}),
    "orchestrator": (codeqa_llm.orchestrator, {"kind": "orchestrator", "tools": list(TOOLS)}),
    "researcher": (no_repo_researcher, {"kind": "researcher"}),
    "task": (director_evaluator_script(3), {"kind": "task", "params": {"goal": "a haiku"}}),
}


@pytest.mark.parametrize("workload", WORKLOADS)
def test_every_workload_makes_at_most_its_budget_of_calls(client, tmp_path, workload):
    script, options = WORKLOADS[workload]
    root = codeqa_llm.make_repos(tmp_path / "repos")
    fake_llm.make_repo(root)
    where = {"workspace": root} if workload == "task" else {"root": root}
    goal = EXAMPLE.read_text() if workload == "task" else "How is a discount code applied?"
    with client(script) as c:
        run = c.submit(goal, budget=Budget(max_llm_calls=3), **where, **options)
        result = run.wait(timeout=120)
        made = calls_in_log(c, run.run_id)
        streams = {r.event.stream_id for r in c.store.read_all(run_id=run.run_id)}
        report = replay_run(c.store, run.run_id)
    assert result.status == "failed" and result.error.type in (BUDGET_EXHAUSTED, "budget_exceeded")
    assert made == 3
    if workload == "orchestrator":  # step 1, step 2, then the tool's HyDE call: the tool's keyword call is refused
        assert result.error.type == BUDGET_EXHAUSTED
        assert f"tool:semantic_file_search:{run.run_id}" in streams
    if workload in ("researcher", "task"):
        assert result.error.type == BUDGET_EXHAUSTED  # the plan counts: the agent's own count never reached 3
    assert report.ok, report.divergence and report.divergence.describe()


def test_a_completed_code_question_reports_every_call_of_its_log(client, tmp_path):
    repos = codeqa_llm.make_repos(tmp_path / "repos")
    with client(codeqa_llm.orchestrator) as c:
        run = c.submit("How is a discount code applied?", root=repos, kind="orchestrator", tools=list(TOOLS))
        result = run.wait(timeout=120)
        completed = c.store.read_stream(run_stream(run.run_id))[-1]
        [usage] = AuditTrail.open(c.store).usage_by_run(run.run_id)
    assert result.ok, result.error
    assert completed.type_name == "RunCompleted"
    assert completed.llm_calls == usage.calls == 6  # 4 steps of the agent, HyDE and keywords in the tool
    assert completed.tokens == usage.tokens > 0


def test_a_lead_killed_mid_run_goes_on_with_the_count_its_log_holds(client, tmp_path, ray_local):
    repos = codeqa_llm.make_repos(tmp_path / "repos")
    with client(slow_orchestrator) as c:
        run = c.submit(
            "How is a discount code applied?", root=repos, kind="orchestrator", tools=list(TOOLS),
            budget=Budget(max_llm_calls=5),
        )  # fmt: skip
        deadline = time.monotonic() + 120
        while calls_in_log(c, run.run_id) < 3:  # the lead's two steps and the tool's HyDE call
            assert time.monotonic() < deadline, "the run never got going"
            time.sleep(0.05)
        ray_local.kill(run._actor, no_restart=False)  # the lead, its tools and its ledger die
        result = run.wait(timeout=120)
        records = list(c.store.read_all(run_id=run.run_id))
    requests = [(r.event.stream_id, r.event.call_index) for r in records if r.event.type_name == "LlmRequested"]
    assert len(requests) == len(set(requests)) == 5  # none twice, none over the budget
    tool = [r.event.request_hash for r in records if r.event.type_name == "LlmRequested" and r.event.stream_id.startswith("tool:")]
    assert len(tool) == len(set(tool)) == 2  # the re-run tool was served its HyDE call, not called again
    assert result.status == "failed" and (result.error.type, result.error.reason) == (BUDGET_EXHAUSTED, "llm_calls")


def test_parallel_map_workers_on_ray_cannot_overshoot_the_runs_ledger(ray_local, tmp_path):
    from events.store import EventStore

    store = EventStore(f"sqlite:///{tmp_path / 'c.db'}")
    ActorShell(RunLifecycle(), run_stream("m"), store, run_id="m").load().handle(
        Submit(key="submit", goal="g", budget=Budget(max_llm_calls=5))
    )
    ledger = RayLedger.start("m", ledger_from_log(store, "m"), store.url)
    try:
        provider = ScriptedProvider(["a note"])
        searchers = [
            ToolContext(run_id="m", tool=f"repository_search_{i}", store_url=store.url, provider=provider, ledger=ledger)
            for i in range(2)
        ]
        requests = [LlmRequest(model="m", messages=[{"role": "user", "content": f"map {i}"}]) for i in range(4)]
        # Two searchers' map steps (Ray tasks, in parallel) against one budget of 5.
        mapped = ray_local.get([ray_local.remote(num_cpus=0)(map_step).remote(s, requests) for s in searchers])
        sent = sum(isinstance(r, LlmResult) for results in mapped for r in results)
        refused = sum(isinstance(r, BudgetExhausted) for results in mapped for r in results)
        assert (sent, refused) == (5, 3)
        assert sum(r.event.type_name == "LlmRequested" for r in store.read_all(run_id="m")) == 5
        assert ledger.spent().calls == 5
    finally:
        ledger.close()
