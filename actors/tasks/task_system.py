"""The TaskSystem and the AtomicTaskExecutor (seed 001).

The TaskSystem owns the atomic task templates (registered from XML, validated, looked up by
name) and runs one atomic task per `execute_atomic_template(SubtaskRequest)`: it checks the
params, prepares context (inherited and/or fresh from the MemorySystem), creates a Handler
with the template's limits, and asks the AtomicTaskExecutor to run the body. Expected
failures come back as FAILED TaskResults; only a bad template at registration raises.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from actors.tasks.handler import Handler, HandlerPayload
from actors.tasks.memory import AssociativeMatchResult, ContextGenerationInput, MemorySystem
from actors.tasks.result import SubtaskRequest, TaskResult, failed
from actors.tasks.sexp.evaluator import plain
from actors.tasks.templates import AtomicTemplate, MissingParam, TemplateError, parse_template, substitute
from actors.tasks.events import TaskCalled, TaskReturned

HandlerFactory = Callable[[AtomicTemplate], Handler]


class AtomicTaskExecutor:
    """Substitutes `{{params}}` (from the given params only) and hands the Handler the prompt."""

    def execute_body(
        self, template: AtomicTemplate, params: dict[str, Any], context: str, files: dict[str, str], handler: Handler
    ) -> TaskResult:
        try:
            system = substitute(template.system, params)
            prompt = substitute(template.instructions, params)
        except MissingParam as e:
            return failed("template_error", "missing_param", f"{template.name}: {e}", {"param": e.name})
        payload = HandlerPayload(
            task=template.name,
            system=system,
            prompt=prompt,
            files=files,
            context=context,
            output_format=template.output_format,
            output_schema=template.output_schema,
            tools=tuple(template.tools),
        )
        return handler.execute_prompt(payload)


class TaskSystem:
    def __init__(
        self,
        handler_factory: HandlerFactory,
        memory: MemorySystem | None = None,
        note: Callable[[Any], None] | None = None,
    ) -> None:
        self.templates: dict[str, AtomicTemplate] = {}
        self.handler_factory = handler_factory
        self.memory = memory or MemorySystem()
        self.note = note or (lambda event: None)
        self.calls = 0

    # -- templates -----------------------------------------------------------------------------

    def register_template(self, source: str, origin: str = "template") -> AtomicTemplate:
        """Validate and register; raises TemplateError (a configuration error) if invalid.
        A template of the same name replaces the earlier one (a user's overrides a built-in)."""
        template = parse_template(source, origin)
        for tool in template.tools:
            if tool.startswith("system:run_script"):
                raise TemplateError(f"{origin}: an LLM may not be given system:run_script as a tool")
        self.templates[template.name] = template
        return template

    def find_template(self, name: str) -> AtomicTemplate | None:
        return self.templates.get(name)

    # -- running -------------------------------------------------------------------------------

    def execute_atomic_template(self, request: SubtaskRequest, reason: str = "call") -> TaskResult:
        self.calls += 1
        call_id = self.calls
        self.note(TaskCalled(call_id=call_id, task=request.name, params=plain(request.params), reason=reason))
        result = self._execute(request)
        self.note(
            TaskReturned(
                call_id=call_id, task=request.name, status=result.status, content=plain(result.content), notes=plain(result.notes)
            )
        )
        return result

    def _execute(self, request: SubtaskRequest) -> TaskResult:
        template = self.find_template(request.name)
        if template is None:
            known = ", ".join(sorted(self.templates)) or "none"
            return failed("task_not_found", "unknown_task", f"no atomic task named {request.name!r} (known: {known})")
        params, problem = self._params(template, request.params)
        if problem is not None:
            return problem
        handler = self.handler_factory(template)
        try:
            paths = [substitute(f, params) for f in template.files if f.strip()]
        except MissingParam as e:
            return failed("template_error", "missing_param", f"{template.name}: {e}", {"param": e.name})
        context = ""
        if template.inherit_context and request.inherited_context and not request.disable_context:
            context = request.inherited_context
        if template.fresh_context:
            try:
                query = substitute(template.instructions, params)
            except MissingParam as e:
                return failed("template_error", "missing_param", f"{template.name}: {e}", {"param": e.name})
            found = self.relevant_context(
                ContextGenerationInput(
                    query=query, inherited_context=request.inherited_context, disable_context=request.disable_context
                )
            )
            if found.error is not None:
                return failed(found.error.type, found.error.reason, f"context for {template.name}: {found.error.message}")
            paths += [p for p in found.paths if p not in paths]
        files: dict[str, str] = {}
        if paths:
            read = handler.read_files(paths)
            if not read.ok:
                return read
            files = dict(read.content)
        return AtomicTaskExecutor().execute_body(template, params, context, files, handler)

    def _params(self, template: AtomicTemplate, given: dict[str, Any]) -> tuple[dict[str, Any], TaskResult | None]:
        declared = {p.name for p in template.params}
        unknown = sorted(set(given) - declared)
        if unknown:
            return {}, failed(
                "template_error",
                "unknown_param",
                f"{template.name} has no parameter {unknown[0]!r} (it takes: {', '.join(sorted(declared)) or 'none'})",
            )
        params = dict(given)
        for p in template.params:
            if params.get(p.name) is None:
                if p.default is not None:
                    params[p.name] = p.default
                elif p.required:
                    return {}, failed(
                        "template_error", "missing_param", f"{template.name} needs the parameter {p.name!r}", {"param": p.name}
                    )
        return params, None

    def relevant_context(self, request: ContextGenerationInput) -> AssociativeMatchResult:
        """The memory system's answer, scored by the associative matching task."""

        def match(query: str, candidates: str) -> TaskResult:
            task = SubtaskRequest(name=self.memory.matching_task, params={"query": query, "candidates": candidates})
            if self.find_template(task.name) is None:
                return failed("memory_error", "no_matching_task", f"no associative matching task named {task.name!r}")
            return self.execute_atomic_template(task, reason="context")

        return self.memory.get_relevant_context_for(request, match)
