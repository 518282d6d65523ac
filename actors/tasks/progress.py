"""One readable line per workflow event, for `chorus task` as it runs (and its REPL), and for
`chorus log` / `chorus events` of a workflow run (through `TaskRun.describe`)."""

from __future__ import annotations

import json
from typing import Any

from actors.runtime.progress import describe as describe_runtime
from events.base import Event

MAX_INDENT = 8


def _short(text: str, n: int = 110) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _args(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={_short(json.dumps(v, ensure_ascii=False, default=str), 40)}" for k, v in params.items())


def describe_workflow(e: Event) -> str | None:
    """A line for a workflow event; None for any other."""
    t = e.type_name
    d: Any = e
    if t == "WorkflowStarted":
        return f"workflow ({d.kind}): {len(d.templates)} task templates, {len(d.tools)} tools, {len(d.memory_index)} files indexed"
    if t == "WorkflowForked":
        switch = ""
        if d.model or d.params:
            switch = f", with {d.model or 'the same model'}" + (f" ({_args(d.params)})" if d.params else "")
        return (
            f"forked from run {d.origin_run} at position {d.origin_position}: its first {d.llm_calls} LLM "
            f"call(s) and {d.tool_calls} tool call(s) served from its log, the rest live{switch}"
        )
    if t == "StepEvaluated":
        return f"{'  ' * min(d.depth - 1, MAX_INDENT)}· {_short(d.form, 100)}"
    if t == "TemplateMatched":
        return f"matched template {d.template} ({_short(d.why, 100)})"
    if t == "TaskCalled":
        via = "" if d.reason == "call" else f" [{d.reason}]"
        return f"  → task {d.task}({_short(_args(d.params), 100)}){via}"
    if t == "TaskReturned":
        if d.status == "FAILED":
            err = d.notes.get("error") or {}
            return f"  ← {d.task} FAILED: {err.get('type')} ({err.get('reason')}): {_short(err.get('message', ''), 90)}"
        content = d.content if isinstance(d.content, str) else json.dumps(d.content, ensure_ascii=False, default=str)
        return f"  ← {d.task} {d.status}: {_short(content, 90)}"
    if t == "WorkflowFinished":
        return (
            f"finished {d.status}: {d.steps} steps, {d.llm_calls} LLM calls, {d.tool_calls} tool calls, {d.tokens} tokens"
        )
    return None


def describe(e: Event) -> str:
    """A line for `e` as `chorus task` shows it live, or '' for events a person need not see."""
    if e.type_name == "ToolCalled":
        d: Any = e
        return f"  tool {d.tool}({_short(_args(d.args), 100)})"
    line = describe_workflow(e)
    return line if line is not None else describe_runtime(e)
