"""The Dispatcher (seed 001, flows 1, 2a and 2b) and the World the evaluator runs in.

- Input starting with `(` is an S-expression workflow: the SexpEvaluator runs it (2a).
- Otherwise it is an identifier: an atomic task template first, then a direct tool (2b);
  neither is a FAILED TaskResult.
- A plain question (the REPL's passthrough, flow 1) gets relevant files from the memory
  system, their contents through the Handler's tools, and one answer from the LLM with the
  conversation history.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from actors.tasks.handler import Handler
from actors.tasks.matching import match_template, score_templates
from actors.tasks.memory import MATCHING_TASK, ContextGenerationInput
from actors.tasks.result import SubtaskRequest, TaskResult, complete, failed
from actors.tasks.sexp.evaluator import EvalLimits, SexpEvaluator
from actors.tasks.task_system import TaskSystem
from actors.tasks.events import StepEvaluated, TemplateMatched

PASSTHROUGH_SYSTEM = (
    "You are a helpful assistant answering questions about the user's project. "
    "Answer briefly and concretely; say so when the files shown do not contain the answer."
)


def is_sexp(text: str) -> bool:
    """Seed 001: input starting with '(' is a workflow (comments and blank lines before it allowed)."""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith(";"):
            return stripped.startswith(("(", "'"))
    return False


class TaskWorld:
    """What the evaluator reaches: steps go to the journal, tasks to the TaskSystem, tools
    and files to the Handler, context to the MemorySystem."""

    def __init__(self, tasks: TaskSystem, tools: Handler, note: Callable[[Any], None]) -> None:
        self.tasks = tasks
        self.tools = tools
        self.note = note

    def on_step(self, step: int, depth: int, form: str, line: int, column: int) -> None:
        self.note(StepEvaluated(step=step, depth=depth, form=form, line=line, column=column))

    def has_task(self, name: str) -> bool:
        return self.tasks.find_template(name) is not None

    def call_task(self, request: SubtaskRequest, reason: str) -> TaskResult:
        return self.tasks.execute_atomic_template(request, reason)

    def has_tool(self, name: str) -> bool:
        return self.tools.has_tool(name)

    def call_tool(self, name: str, args: dict[str, Any]) -> TaskResult:
        return self.tools.execute_tool(name, args)

    def get_context(self, query: str, max_results: int, inherited_context: str | None, disable_context: bool) -> TaskResult:
        found = self.tasks.relevant_context(
            ContextGenerationInput(
                query=query, inherited_context=inherited_context, disable_context=disable_context, max_results=max_results
            )
        )
        if found.error is not None:
            return failed(found.error.type, found.error.reason, found.error.message)
        return complete(found.paths, scores=dict(found.matches))


class Dispatcher:
    def __init__(
        self,
        tasks: TaskSystem,
        tools: Handler,
        note: Callable[[Any], None],
        limits: EvalLimits = EvalLimits(),
        query_handler: Callable[[], Handler] | None = None,
        elapsed: Callable[[], float] | None = None,
    ) -> None:
        """`elapsed`: the workflow's age in seconds by its recorded clock (see `SexpEvaluator`)."""
        self.tasks = tasks
        self.tools = tools
        self.world = TaskWorld(tasks, tools, note)
        self.limits = limits
        self.query_handler = query_handler or (lambda: tools)
        self.elapsed = elapsed

    def execute_programmatic_task(self, text: str, params: dict[str, Any] | None = None) -> TaskResult:
        params = dict(params or {})
        evaluator = SexpEvaluator(self.world, self.limits, self.elapsed)
        if is_sexp(text):
            return evaluator.run(text, params)
        ident = text.strip()
        if self.tasks.find_template(ident) is not None:
            return evaluator.run_task(SubtaskRequest(name=ident, params=params))
        if self.tools.has_tool(ident):
            return self.tools.execute_tool(ident, params)
        return failed(
            "task_not_found",
            "unknown_identifier",
            f"{ident!r} is neither an atomic task ({', '.join(sorted(self.tasks.templates)) or 'none'}) "
            f"nor a direct tool ({', '.join(sorted(self.tools.tools)) or 'none'})",
        )

    def execute_request(self, text: str, params: dict[str, Any] | None = None) -> TaskResult:
        """A plain-language request: the highest-scoring atomic task template runs, with the
        parameters bound from the request (seed 001). Which template and why is recorded
        before it runs; no match, or a match whose required parameters cannot be bound, is a
        FAILED result that says so."""
        pool = [t for name, t in self.tasks.templates.items() if name != MATCHING_TASK]
        match = match_template(text, pool, params or {})
        if match is None:
            best = score_templates(text, pool)[:3]
            shown = "; ".join(f"{c.name} {c.score:.2f}" for c in best) or "no templates"
            return failed(
                "task_not_found",
                "no_template_matched",
                f"no atomic task template matches {text.strip()[:80]!r} (best: {shown}); "
                "name a task or tool, or write an S-expression",
                {"candidates": [{"name": c.name, "score": c.score} for c in best]},
            )
        self.world.note(
            TemplateMatched(
                request=text,
                template=match.template,
                score=match.score,
                why=match.why,
                params=match.params,
                candidates=[{"name": c.name, "score": c.score, "matched": list(c.matched)} for c in match.candidates],
            )
        )
        if match.missing:
            return failed(
                "task_failure",
                "missing_params",
                f"{match.template} matched the request ({match.why}) but needs {', '.join(match.missing)}: "
                "give them with --param KEY=VALUE",
                {"template": match.template, "missing": match.missing},
            )
        evaluator = SexpEvaluator(self.world, self.limits, self.elapsed)
        return evaluator.run_task(SubtaskRequest(name=match.template, params=match.params))

    def handle_query(self, query: str, history: list[dict[str, Any]]) -> TaskResult:
        # The conversation so far is the inherited context: a follow-up question ("which file
        # was that?") is matched together with the exchange it follows.
        recent = "\n".join(f"{m.get('role')}: {m.get('content')}" for m in history[-2:]) or None
        found = self.tasks.relevant_context(ContextGenerationInput(query=query, inherited_context=recent))
        paths = found.paths if found.error is None else []
        system = PASSTHROUGH_SYSTEM
        if paths:
            read = self.tools.read_files(paths)
            if read.ok:
                shown = "\n\n".join(f"File {p}:\n```\n{t[:4000]}\n```" for p, t in read.content.items())
                system = f"{system}\n\nRelevant files:\n\n{shown}"
        result = self.query_handler().chat(system, history, query)
        if result.ok:
            return result.model_copy(update={"notes": {**result.notes, "files": paths}})
        return result
