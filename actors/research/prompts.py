"""The Researcher's two prompts of its own — the plan and the final report — and reading
their replies. The Thought/Action/Observation loop in between is the ReAct agent's.
Pure: no I/O."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from actors.agent.prompt import HistoryItem
from actors.agent.policy import unwrap_answer
from actors.runtime.llm.types import LlmRequest

MAX_PLAN_STEPS = 5
FINDING_CHARS = 700

PLAN_SCHEMA = {
    "type": "object",
    "properties": {
        "steps": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": MAX_PLAN_STEPS}
    },
    "required": ["steps"],
}

PLAN_SYSTEM = (
    "You plan research about a code repository. Break the objective into 2 to 5 short, concrete "
    'steps a researcher with a code search tool would take. Reply as JSON: {"steps": ["...", ...]}.'
)
REPORT_SYSTEM = (
    "You write the final research report in markdown: a title, a short summary that answers the "
    "objective, then the key findings, each citing the file and lines it comes from as "
    "path:start-end, exactly as they appear in the findings. Use only the findings given."
)

_BULLET = re.compile(r"^\s*(?:[-*]|(?:step\s*)?\d+[.):])\s*", re.IGNORECASE)

# path:12 or path:12-40, for paths with a file suffix (what the tools print)
CITATION = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.[A-Za-z0-9]+)(?::|, lines )(\d+)(?:-(\d+))?")


def plan_request(objective: str, repo: str | None, model: str, params: dict[str, Any]) -> LlmRequest:
    where = f"\nRepository: {repo}" if repo else ""
    return LlmRequest(
        model=model,
        messages=[
            {"role": "system", "content": PLAN_SYSTEM},
            {"role": "user", "content": f"Objective: {objective.strip()}{where}"},
        ],
        params={**params, "max_tokens": 200},
        response_schema=PLAN_SCHEMA,
    )


def parse_plan(parsed: dict[str, Any] | None, content: str, objective: str) -> list[str]:
    """The steps; a reply that is not a plan falls back to its lines, then to the objective."""
    items: list[str] = []
    if isinstance(parsed, dict) and isinstance(parsed.get("steps"), list):
        items = [str(s) for s in parsed["steps"]]
    if not any(s.strip() for s in items):
        items = [line for line in content.splitlines() if not line.strip().startswith(("{", "}", "[", "]"))]
    steps = [_BULLET.sub("", s).strip() for s in items]
    return [s for s in steps if s][:MAX_PLAN_STEPS] or [objective.strip()]


def agent_goal(objective: str, plan: Sequence[str]) -> str:
    lines = [objective.strip(), "", "Plan:"] + [f"{i}. {s}" for i, s in enumerate(plan, 1)]
    return "\n".join(lines)


def findings(history: Sequence[HistoryItem]) -> list[str]:
    out = []
    for item in history:
        if not item.action or item.action == "answer":
            continue
        obs = item.observation.strip()
        if len(obs) > FINDING_CHARS:
            obs = obs[:FINDING_CHARS] + " …"
        args = ", ".join(f"{k}={v!r}" for k, v in item.args.items())
        out.append(f"- {item.action}({args}) → {obs}")
    return out


def report_request(
    objective: str, plan: Sequence[str], history: Sequence[HistoryItem], answer: str | None,
    model: str, params: dict[str, Any],
) -> LlmRequest:
    parts = [f"Objective: {objective.strip()}", "Plan:"] + [f"{i}. {s}" for i, s in enumerate(plan, 1)]
    parts += ["", "Findings:"] + (findings(history) or ["- (the tools found nothing)"])
    parts += ["", f"Researcher's answer: {unwrap_answer(answer) if answer else '(none: the step limit came first)'}"]
    parts += ["", "Write the report."]
    return LlmRequest(
        model=model,
        messages=[{"role": "system", "content": REPORT_SYSTEM}, {"role": "user", "content": "\n".join(parts)}],
        params={**params, "max_tokens": 350},
    )


def sources(history: Sequence[HistoryItem]) -> list[str]:
    """Every path:lines the tools showed the researcher, in first-seen order."""
    seen: dict[str, None] = {}
    for item in history:
        for path, start, end in CITATION.findall(item.observation):
            seen.setdefault(f"{path}:{start}-{end}" if end else f"{path}:{start}", None)
    return list(seen)


def final_report(content: str, history: Sequence[HistoryItem]) -> str:
    """The model's markdown, with a Sources section listing what the tools actually showed."""
    body = content.strip() or "# Research report\n\n(the model wrote nothing)"
    cited = sources(history)
    if cited:
        body += "\n\n## Sources\n" + "\n".join(f"- `{c}`" for c in cited)
    return body + "\n"
