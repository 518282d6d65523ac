"""The Researcher (seed 000 §2.2, flow §4) as an agent function: index the repository, plan,
run the ReAct loop over the run's tools, write a markdown report.

It is written on the durable layer a user writes agents with (`actors.sdk`): every call
through `ctx` is recorded before its result is used, so the indexing (a call of the
`index_repository` tool), the plan, every step of the loop and the report replay without
repository, embedder or model. The loop is the ReAct agent's behaviour, run in-line with
`ctx.drive`; the research history view follows the run by the events it emits:
ResearchRequested (PENDING) → IndexingStarted (INDEXING) → IndexingCompleted or
ResearchStarted (RUNNING) → ReportWritten (COMPLETED) | ResearchFailed (FAILED).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, NoReturn

from actors.agent.react import ReactAgent, StartAgent
from actors.research import prompts
from actors.runtime.durable import Context, Failure, ToolError
from actors.runtime.ledger import BudgetExhausted
from actors.agent.events import ToolSpec, revision_patches
from actors.agent.patches import lookup_patched
from events.errors import ErrorInfo
from actors.research.events import (
    IndexingCompleted,
    IndexingStarted,
    PlanMade,
    ReportWritten,
    ResearchFailed,
    ResearchRequested,
    ResearchStarted,
)
from events.runs import Budget, BudgetExceeded

INDEXER = "index_repository"


def research(ctx: Context, objective: str, *, repo_url: str | None = None, root: str = "", tools: Sequence[Any] = (),
             max_iterations: int = 10, budget: dict[str, Any] | None = None, grounded: bool = False,
             lookups: bool = False, states_answer: bool = False, patches: Sequence[str] = (),
             rules: int | None = None) -> str:  # fmt: skip
    """The report on `objective`, researched in `repo_url` (a folder or a git URL) or `root`.
    `patches` are the loop's (AgentStarted.patches); `rules`, the rule revision a run recorded
    before patches passed instead, stands for the patches it meant. A loop with `lookups` has
    patch definition_checks: runs recorded before it was a patch ran its checks, and their
    options cannot say so (`lookup_patched`)."""
    specs = [ToolSpec.model_validate(t) for t in tools]
    patches = lookup_patched(list(patches) if rules is None else revision_patches(rules), lookups)
    requested = ResearchRequested(
        objective=objective, repo_url=repo_url, root=root, tools=specs, max_iterations=max_iterations,
        model=ctx.model, params=ctx.params, budget=Budget.model_validate(budget or {}), grounded=grounded,
        lookups=lookups, states_answer=states_answer, patches=patches,
    )  # fmt: skip
    ctx.emit(requested, IndexingStarted(repo_url=repo_url) if repo_url else ResearchStarted(lead_stream=""))
    try:
        if repo_url:
            root = _index(ctx, repo_url)
            ctx.use_folder(root)
        names = [t.name for t in specs]
        reply = ctx.request(prompts.plan_request(objective, repo_url, ctx.model, ctx.params, tools=names if grounded else None))
        plan = prompts.parse_plan(*_completed(ctx, reply), objective)
        if grounded:
            plan = prompts.tool_plan(plan, names, objective)
        ctx.emit(PlanMade(steps=plan))
        loop = ctx.drive(ReactAgent(), StartAgent(
            key="start", goal=prompts.agent_goal(objective, plan), root=root, tools=specs, max_iterations=max_iterations,
            model=ctx.model, params=ctx.params, budget=requested.budget, grounded=grounded, lookups=lookups, patches=patches,
        ))  # fmt: skip
        if loop.status == "failed" and loop.error.type != "iteration_limit":
            _fail(ctx, loop.error)  # the report needs a working model
        reply = ctx.request(prompts.report_request(objective, plan, loop.history, loop.answer, ctx.model, ctx.params))
        stated = prompts.stated_answer(loop.answer) if states_answer else None
        report = prompts.final_report(_completed(ctx, reply)[1], loop.history, answer=stated)
    except BudgetExhausted as e:  # the plan or the report refused by the run's budget
        ctx.emit(BudgetExceeded(error=e.error))
        _fail(ctx, e.error)
    ctx.emit(ReportWritten(final_report=report))
    return report


def _index(ctx: Context, repo_url: str) -> str:
    """Index the repository; the folder it was indexed in (a clone, for a URL)."""
    try:
        report = json.loads(ctx.tool(INDEXER, source=repo_url))
        done = IndexingCompleted(
            files=report["files"], chunks=report["chunks"], root=report["root"], collection=report["collection"],
            files_unchanged=report.get("files_unchanged", 0),
            skipped=report.get("skipped_binary", 0) + report.get("skipped_large", 0), summary=_summary(report),
        )  # fmt: skip
    except ToolError as e:
        error = e.error or ErrorInfo(type="indexing_failed", reason="indexing_failed", message=str(e).removeprefix("Error: "))
        _fail(ctx, error.model_copy(update={"type": "indexing_failed", "message": error.message.removeprefix(f"{error.reason}: ")}))
    except (ValueError, KeyError, TypeError) as e:
        _fail(ctx, ErrorInfo(type="research_error", reason="indexing_failed", message=f"unreadable index report: {e}"))
    ctx.emit(done)
    return done.root


def _completed(ctx: Context, recorded: list[Any]) -> tuple[dict[str, Any] | None, str]:
    """A recorded LLM call's parsed reply and text; a failed call fails the research."""
    result = recorded[-1]
    if result.type_name == "LlmFailed":
        _fail(ctx, result.error)
    return result.parsed, result.content


def _fail(ctx: Context, error: ErrorInfo) -> NoReturn:
    ctx.emit(ResearchFailed(error=error))
    raise Failure(error)


def _summary(report: dict[str, Any]) -> str:
    skipped = report.get("skipped_binary", 0) + report.get("skipped_large", 0)
    return (
        f"{report['files']} files, {report['chunks']} chunks; {report.get('files_embedded', 0)} files embedded, "
        f"{report.get('files_unchanged', 0)} unchanged and skipped; {skipped} binary or huge files skipped"
    )
