"""One readable line per workflow event, for `chorus task` as it runs (and its REPL)."""

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


def describe(e: Event) -> str:
    """A line for `e`, or '' for events a person watching need not see."""
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
    if t == "TaskCalled":
        via = "" if d.reason == "call" else f" [{d.reason}]"
        return f"  → task {d.task}({_short(_args(d.params), 100)}){via}"
    if t == "TaskReturned":
        if d.status == "FAILED":
            err = d.notes.get("error") or {}
            return f"  ← {d.task} FAILED: {err.get('type')} ({err.get('reason')}): {_short(err.get('message', ''), 90)}"
        content = d.content if isinstance(d.content, str) else json.dumps(d.content, ensure_ascii=False, default=str)
        return f"  ← {d.task} {d.status}: {_short(content, 90)}"
    if t == "ToolCalled":
        return f"  tool {d.tool}({_short(_args(d.args), 100)})"
    if t == "WorkflowFinished":
        return (
            f"finished {d.status}: {d.steps} steps, {d.llm_calls} LLM calls, {d.tool_calls} tool calls, {d.tokens} tokens"
        )
    return describe_runtime(e)
