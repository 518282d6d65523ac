"""The Researcher's two prompts of its own — the plan and the final report — and reading
their replies. The Thought/Action/Observation loop in between is the ReAct agent's.
Pure: no I/O."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from actors.agent.prompts import HistoryItem
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


# A grounded researcher plans in its own tools' steps, never in shell commands.
TOOL_PLAN_SYSTEM = (
    "You plan research about a code repository. The researcher can only call these tools: {tools}. "
    "Write 2 to 4 steps; each step is one of those tools and what to give it, e.g. "
    '"search_files: Packer datetime" or "find_definition: Packer". No shell commands, no web, '
    'no documentation outside the code. Reply as JSON: {{"steps": ["...", ...]}}.'
)
_SHELL = re.compile(r"\b(cd|grep|findstr|ls|cat|git|pip|clone|terminal|shell|command line|browse|google|web|online|official documentation)\b", re.I)


def plan_request(
    objective: str, repo: str | None, model: str, params: dict[str, Any], tools: Sequence[str] | None = None
) -> LlmRequest:
    """The plan's request; with `tools` (a grounded researcher), a plan of those tools' steps."""
    where = f"\nRepository: {repo}" if repo else ""
    system = TOOL_PLAN_SYSTEM.format(tools=", ".join(tools)) if tools else PLAN_SYSTEM
    return LlmRequest(
        model=model,
        messages=[
            {"role": "system", "content": system},
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


def tool_plan(plan: Sequence[str], tools: Sequence[str], objective: str) -> list[str]:
    """The plan's steps the researcher's tools can take: a step naming no tool, or a shell
    command, is dropped; with none left, the default: search, the definition, the lines."""
    kept = [s for s in plan if any(t in s for t in tools) and not _SHELL.search(s.split(":", 1)[-1] if ":" in s else s)]
    if kept:
        return kept
    tokens = re.findall(r"\w+", objective)
    names = [t for i, t in enumerate(tokens) if "_" in t or re.search(r"[a-z][A-Z]", t) or (i and t[:1].isupper())]
    words = " ".join(dict.fromkeys(names[:3])) or "the key words of the objective"
    default = [
        f"{'search_files' if 'search_files' in tools else 'repository_search'}: {words}",
        "find_definition: the class or function the search shows",
        "read_file: the lines that state the answer",
    ]
    return [s for s in default if s.split(":")[0] in tools] or [objective.strip()]


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


NO_ANSWER = "Not found in the code: no line the tools showed answers the objective."


def stated_answer(answer: str | None) -> str:
    """What a report states as its answer: the loop's checked answer (grounded ones end with
    their `Evidence:` line), or, with none, plainly that nothing was found."""
    text = unwrap_answer(answer).strip() if answer else ""
    if not text:
        return NO_ANSWER + " (the step limit came first)" if answer is None else NO_ANSWER
    return text


def final_report(content: str, history: Sequence[HistoryItem], answer: str | None = None) -> str:
    """The model's markdown, with a Sources section listing what the tools actually showed.
    With `answer` (runs that state their answer), an `## Answer` section holding it comes
    right after the report's title, so the checked answer, or "not found", is never left to
    the model's paraphrase."""
    body = content.strip() or "# Research report\n\n(the model wrote nothing)"
    if answer is not None:
        title, _, rest = body.partition("\n")
        if not title.startswith("# "):
            title, rest = "# Research report", body
        rest = rest.strip()
        if rest and not rest.startswith("## "):  # the section ends where the model's text begins
            rest = f"## Report\n\n{rest}"
        body = f"{title}\n\n## Answer\n\n{answer.strip()}\n" + (f"\n{rest}" if rest else "")
    cited = sources(history)
    if cited:
        body += "\n\n## Sources\n" + "\n".join(f"- `{c}`" for c in cited)
    return body + "\n"
