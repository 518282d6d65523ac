"""The words the relay's models read (seed 004): the Builder's prompt and the Verifier's LLM
coherence check.

The Builder's prompt is the seed's `roadmap[N] + context + defect_capsule`: the item and its
acceptance criteria, the baton (summaries of past turns, already bounded), the top similar
past turns from vector memory, the current files (truncated), and on a retry the defect
capsule, last, nearest to where the model starts writing (a retry is also sampled warmer,
RETRY_TEMPERATURE, so that it is not the failed attempt again). Every part has a character cap,
so the prompt stays bounded however long the relay runs. Written for a 1.5B coder model:
short lines, one way to answer, the format shown rather than described. Pure.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import Any

from actors.relay.roadmap import RoadmapItem
from actors.runtime.llm.json_text import parse_json_object
from actors.runtime.llm.types import LlmRequest
from actors.relay.events import BatonPacket, DefectCapsule

BUILDER_MAX_TOKENS = 1024
# A retry samples warmer than the turn it repairs: at the same low temperature a small model,
# shown its own failed code, mostly writes it again (seen on HumanEval with the 1.5B model).
RETRY_TEMPERATURE = 0.6
COHERENCE_MAX_TOKENS = 200
MAX_CONTEXT_TURNS = 5  # the seed's `db.search(embedding).limit(5)`
CONTEXT_CHARS = 500  # each retrieved past turn
BATON_CHARS = 2400
FILE_CHARS = 3000  # each current file
FILES_CHARS = 9000  # all current files together; past it only their names
DEFECT_CHARS = 1500
DIFF_CHARS = 6000
MAX_UNMET = 5

_LANGS = {
    ".py": "python", ".js": "javascript", ".ts": "typescript", ".md": "markdown", ".json": "json",
    ".yaml": "yaml", ".yml": "yaml", ".toml": "toml", ".sh": "bash", ".cfg": "ini", ".ini": "ini",
    ".html": "html", ".css": "css", ".sql": "sql", ".txt": "text",
}  # fmt: skip

BUILDER_SYSTEM = """You are the Builder in a relay. Each turn you do one roadmap item. A Verifier then runs
ruff and pytest on the workspace and checks the item's acceptance criteria.

Reply in this order:
1. Say in one sentence what you changed.
2. Every file you create or change, WHOLE, in a fenced block with its path on the line before:
File: path/to/module.py
```python
def example():
    return 1
```
3. Then the checks the Verifier should run:
Verification hints:
- python -m pytest test_module.py

Rules:
- Paths are relative to the workspace root.
- Write each file complete: no placeholders, no "...", no "rest unchanged".
- Keep the names and signatures the item gives.
- When the acceptance criteria name a test file, write that file too, with pytest test_* functions.
- Do not change existing tests unless the item asks you to."""

VERIFIER_SYSTEM = """You are the Verifier in a relay. You judge whether a change meets a roadmap item's
acceptance criteria. Read the criteria and the diff. Reply with one JSON object only:
{"meets_criteria": true or false, "reason": "one short sentence", "unmet": ["each criterion not met"]}
"unmet" is [] when every criterion is met."""


def _clip(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: max(limit - 20, 0)].rstrip() + "\n... (cut)"


def item_text(item: RoadmapItem) -> str:
    lines = [f"Roadmap item: {item.title}"]
    if item.details:
        lines.append(f"Details: {item.details}")
    if item.acceptance_criteria:
        lines.append("Acceptance criteria:")
        lines.extend(f"- {c}" for c in item.acceptance_criteria)
    else:
        lines.append("Acceptance criteria: the item is done as its title says.")
    return "\n".join(lines)


def files_text(files: dict[str, str]) -> str:
    """The workspace's files as the builder sees them: whole while they fit in FILES_CHARS
    (each cut at FILE_CHARS), then by name only; hidden files (a dot in the path) by name."""
    if not files:
        return "Current files: none yet (the workspace is empty)."
    shown: list[str] = []
    names_only: list[str] = []
    used = 0
    for path in sorted(files):
        if any(part.startswith(".") for part in PurePosixPath(path).parts):
            names_only.append(path)  # a tool's configuration (.ruff.toml, .github/...): by name
            continue
        body = _clip(files[path], FILE_CHARS)
        lang = _LANGS.get(PurePosixPath(path).suffix.lower(), "")
        block = f"File: {path}\n```{lang}\n{body}\n```"
        if used + len(block) > FILES_CHARS:
            names_only.append(path)
            continue
        shown.append(block)
        used += len(block)
    out = ["Current files:", *shown]
    if names_only:
        out.append("Other files (not shown): " + ", ".join(names_only[:50]) + (" ..." if len(names_only) > 50 else ""))
    return "\n".join(out)


def failing_tests(defect: DefectCapsule) -> list[str]:
    """The failing test ids a defect carries (in its metadata: `failing_tests`)."""
    for key in ("failing_tests", "failing_test_ids", "test_ids"):
        value = defect.metadata.get(key)
        if isinstance(value, str):
            return [value]
        if isinstance(value, list):
            return [str(v) for v in value]
    return []


def defect_text(defect: DefectCapsule) -> str:
    lines = [
        "Your last attempt FAILED verification. Fix this defect first:",
        f"Defect: {defect.defect_type} (severity {defect.severity})",
        f"Description: {_clip(defect.description, DEFECT_CHARS)}",
    ]
    tests = failing_tests(defect)
    if tests:
        lines.append("Failing tests:")
        lines.extend(f"- {t}" for t in tests[:10])
        if len(tests) > 10:
            lines.append(f"- ... and {len(tests) - 10} more")
    if defect.suggested_fix:
        lines.append(f"Suggested fix: {_clip(defect.suggested_fix, DEFECT_CHARS // 2)}")
    lines.append(
        "The files above are as they were before that attempt. Write the item again, avoiding "
        "the mistake the defect shows."
    )
    return "\n".join(lines)


def builder_request(
    item: RoadmapItem,
    *,
    context: Sequence[str],
    baton: str,
    defect: DefectCapsule | None,
    files: dict[str, str],
    model: str,
    params: dict[str, Any],
) -> LlmRequest:
    """The Builder's one call for a turn. `context` is the similar past turns from vector
    memory (best first; the top MAX_CONTEXT_TURNS are used), `baton` the bounded summary of
    recent turns (`baton_context`), `files` the workspace's current files."""
    sections = [item_text(item)]
    if baton.strip():
        sections.append("Recent turns (most recent first):\n" + _clip(baton, BATON_CHARS))
    similar = [c for c in context if c.strip()][:MAX_CONTEXT_TURNS]
    if similar:
        sections.append(
            "Similar past turns:\n" + "\n".join(f"{n}. {_clip(c, CONTEXT_CHARS)}" for n, c in enumerate(similar, 1))
        )
    sections.append(files_text(files))
    if defect is not None:
        sections.append(defect_text(defect))
    sections.append("Now do the roadmap item. Reply with whole files labelled by path, then Verification hints.")
    return LlmRequest(
        model=model,
        messages=[
            {"role": "system", "content": BUILDER_SYSTEM},
            {"role": "user", "content": "\n\n".join(sections)},
        ],
        params=_builder_params(params, retry=defect is not None),
    )


def _builder_params(params: dict[str, Any], *, retry: bool) -> dict[str, Any]:
    merged: dict[str, Any] = {"max_tokens": BUILDER_MAX_TOKENS, "temperature": 0.2, **params}
    if retry:
        merged["temperature"] = max(float(merged["temperature"]), RETRY_TEMPERATURE)
    return merged


# -- the coherence check -------------------------------------------------------------------------


def coherence_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "meets_criteria": {"type": "boolean"},
            "reason": {"type": "string"},
            "unmet": {"type": "array", "maxItems": MAX_UNMET, "items": {"type": "string"}},
        },
        "required": ["meets_criteria", "reason", "unmet"],
    }


def coherence_request(
    item: RoadmapItem, baton: BatonPacket | str, diff_text: str, model: str, params: dict[str, Any]
) -> LlmRequest:
    """The Verifier's LLM check: does this change meet the item's acceptance criteria, and
    why. It reads the criteria, the builder's summary and hints, and the diff (cut at
    DIFF_CHARS)."""
    if isinstance(baton, BatonPacket):
        summary = baton.builder_summary
        if baton.verification_hints:
            summary += "\nBuilder's hints: " + "; ".join(baton.verification_hints)
    else:
        summary = baton
    diff = diff_text.strip()
    if len(diff) > DIFF_CHARS:
        diff = diff[:DIFF_CHARS].rstrip() + "\n... (diff cut)"
    user = "\n\n".join(
        [
            item_text(item),
            "What the builder says it did:\n" + _clip(summary or "(nothing)", BATON_CHARS),
            "The change:\n```diff\n" + (diff or "(no change)") + "\n```",
            "Does the change meet every acceptance criterion? Reply with the JSON object.",
        ]
    )
    return LlmRequest(
        model=model,
        messages=[{"role": "system", "content": VERIFIER_SYSTEM}, {"role": "user", "content": user}],
        params={"max_tokens": COHERENCE_MAX_TOKENS, "temperature": 0.0, **params},
        response_schema=coherence_schema(),
    )


_TRUE = {"true", "yes", "y", "pass", "passed", "met"}
_FALSE = {"false", "no", "n", "fail", "failed", "not met", "unmet"}
_NOTHING = {"", "none", "n/a", "na", "nothing", "-", "[]"}


def read_coherence(content_or_parsed: str | dict[str, Any] | None) -> tuple[bool, str, list[str]]:
    """(meets_criteria, reason, unmet) from the model's verdict, its text or parsed object.
    Anything without a readable yes/no is (False, "unreadable coherence verdict: ...", []):
    a verdict nobody can read never passes a turn."""
    data = content_or_parsed
    if isinstance(data, str):
        data = parse_json_object(data)
    meets = data.get("meets_criteria") if isinstance(data, dict) else None
    if isinstance(meets, str):
        word = meets.strip().lower()
        meets = True if word in _TRUE else False if word in _FALSE else None
    if not isinstance(meets, bool) or not isinstance(data, dict):
        raw = content_or_parsed if isinstance(content_or_parsed, str) else json.dumps(content_or_parsed, default=str)
        return False, f"unreadable coherence verdict: {' '.join(str(raw).split())[:160]!r}", []
    reason = data.get("reason")
    reason = " ".join(reason.split()) if isinstance(reason, str) and reason.strip() else "no reason given"
    unmet_raw = data.get("unmet", [])
    unmet_list = [unmet_raw] if isinstance(unmet_raw, str) else unmet_raw if isinstance(unmet_raw, list) else []
    unmet = [
        " ".join(u.split())
        for u in unmet_list
        if isinstance(u, str) and u.strip().lower().rstrip(".") not in _NOTHING
    ][:MAX_UNMET]
    return meets, reason, unmet
