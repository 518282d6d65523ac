"""One readable line per event, for live progress and timelines."""

from __future__ import annotations

import json
from typing import Any

from events.base import Event


def _short(text: str, n: int = 100) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _call(action: str, args: dict[str, Any]) -> str:
    inner = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in args.items())
    return f"{action}({_short(inner, 120)})"


def describe(e: Event, brief: bool = False) -> str:
    """A line for `e`, or '' for events a person watching progress need not see."""
    t = e.type_name
    d: Any = e
    if t == "RunSubmitted":
        return f"submitted: {_short(d.goal)}"
    if t == "RunStarted":
        return f"started ({d.lead_stream})" if brief else ""
    if t == "AgentStarted":
        tools = ", ".join(s.name for s in d.tools)
        return f"agent started: tools {tools}; at most {d.max_iterations} iterations"
    if t == "LlmRequested":
        return f"llm call {d.call_index} ({d.model or 'default model'}, {len(d.messages)} messages)" if brief else ""
    if t == "LlmCompleted":
        return (
            f"  llm call {d.call_index}: {d.prompt_tokens}+{d.completion_tokens} tokens, "
            f"{d.latency_s:.1f}s"
        )
    if t == "LlmFailed":
        return f"  ! llm call {d.call_index} failed: {d.error.line()}"
    if t == "StepDecided":
        return f"[{d.iteration}] {_short(d.thought)}\n    → {_call(d.action, d.args)}"
    if t == "StepRejected":
        head = f"[{d.iteration}] {_short(d.thought)}\n    " if d.thought else f"[{d.iteration}] "
        return f"{head}✗ step not run ({d.reason}): {_short(d.observation)}"
    if t == "ToolCalled":
        return f"tool call {d.call_index}: {_call(d.tool, d.args)}" if brief else ""
    if t == "ToolReturned" and d.tool == "index_repository" and d.ok:
        return ""  # IndexingCompleted says it in words
    if t == "ToolReturned":
        mark = "←" if d.ok else "! error"
        first = d.output.strip().splitlines()[0] if d.output.strip() else "(empty)"
        n = len(d.output.splitlines())
        return f"    {mark} {_short(first, 90)}" + (f" (+{n - 1} lines)" if n > 1 else "")
    if t == "AnswerGiven":
        return f"[{d.iteration}] answered" + (f": {_short(d.answer)}" if brief else "")
    if t in ("AgentFailed", "RunFailed", "BudgetExceeded"):
        return f"! {t}: {d.error.line()}"
    if t == "ResearchRequested":
        return f"research: {_short(d.objective)}" + (f" (repository {d.repo_url})" if d.repo_url else "")
    if t == "IndexingStarted":
        return f"indexing {d.repo_url} ..."
    if t == "IndexingCompleted":
        return f"indexed: {d.summary or f'{d.files} files, {d.chunks} chunks'}"
    if t == "PlanMade":
        return "plan:\n" + "\n".join(f"  {i}. {_short(s)}" for i, s in enumerate(d.steps, 1))
    if t == "ReportWritten":
        return f"report written ({len(d.final_report.splitlines())} lines)"
    if t == "ResearchFailed":
        return f"! research failed: {d.error.line()}"
    if t == "RunCompleted":
        return f"completed: {d.llm_calls} LLM calls, {d.tokens} tokens"
    if t in ("WorkflowStarted", "WorkflowForked", "StepEvaluated", "TaskCalled", "TaskReturned", "WorkflowFinished"):
        from actors.tasks.progress import describe as describe_task

        line = describe_task(e)
        if line:
            return line
    return "" if not brief else _short(json.dumps(e.payload(), default=str), 120)
