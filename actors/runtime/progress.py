"""One readable line per event, for live progress and timelines.

The runtime describes its own events (runs, LLM calls, tool calls, budgets); a run's kind
describes the rest (its RunKind's `reading.describe`) and may restyle the runtime's."""

from __future__ import annotations

import json
from typing import Any

from actors.runtime.runkind import RunKind
from events.base import Event

ERROR_TYPES = frozenset({"LlmFailed", "RunFailed", "BudgetExceeded"})


def short(text: str, n: int = 100) -> str:
    """`text` on one line, cut to `n` characters with an ellipsis."""
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def call_text(action: str, args: dict[str, Any]) -> str:
    """`action(k="v", ...)`, cut to a line."""
    inner = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in args.items())
    return f"{action}({short(inner, 120)})"


def describe(e: Event, brief: bool = False, kind: RunKind | None = None) -> str:
    """A line for `e`, or '' for events a person watching progress need not see. With
    `brief`, every event gets a line (`chorus events`, `chorus log`)."""
    if kind is not None:
        line = kind.reading.describe(e, brief)
        if line is not None:
            return line
    line = describe_runtime(e, brief)
    if line is not None:
        return line
    return "" if not brief else short(json.dumps(e.payload(), default=str), 120)


def is_error(e: Event, kind: RunKind | None = None) -> bool:
    """Whether a timeline marks `e` as something that went wrong."""
    if e.type_name in ERROR_TYPES or (kind is not None and e.type_name in kind.wording.error_types):
        return True
    return e.type_name == "ToolReturned" and not e.ok  # type: ignore[attr-defined]


def describe_runtime(e: Event, brief: bool = False) -> str | None:
    """The runtime's own events; None for any other."""
    t = e.type_name
    d: Any = e
    if t == "RunSubmitted":
        return f"submitted: {short(d.goal)}"
    if t == "RunStarted":
        return f"started ({d.lead_stream})" if brief else ""
    if t == "LlmRequested":
        return f"llm call {d.call_index} ({d.model or 'default model'}, {len(d.messages)} messages)" if brief else ""
    if t == "LlmCompleted":
        retried = f", after {len(d.retries)} failed attempt(s): {d.retries[-1].reason}" if d.retries else ""
        return f"  llm call {d.call_index}: {d.prompt_tokens}+{d.completion_tokens} tokens, {d.latency_s:.1f}s{retried}"
    if t == "LlmFailed":
        return f"  ! llm call {d.call_index} failed: {d.error.line()}"
    if t == "ToolCalled":
        return f"tool call {d.call_index}: {call_text(d.tool, d.args)}" if brief else ""
    if t == "ToolReturned":
        mark = "←" if d.ok else "! error"
        first = d.output.strip().splitlines()[0] if d.output.strip() else "(empty)"
        n = len(d.output.splitlines())
        return f"    {mark} {short(first, 90)}" + (f" (+{n - 1} lines)" if n > 1 else "")
    if t in ("RunFailed", "BudgetExceeded"):
        return f"! {t}: {d.error.line()}"
    if t == "RunCompleted":
        return f"completed: {d.llm_calls} LLM calls, {d.tokens} tokens"
    return None
