"""The Handler (seed 001): the task system's LLM interface, resource tracker and hands.

Every LLM call goes through the Journal to the gateway (recorded before use); every file read
and script goes through a direct tool, also recorded. One Handler serves one atomic task
execution with an immutable configuration, and counts that task's turns (LLM calls) and
tokens against its limits: going over ends the task as FAILED with a `resource_exhaustion`
error instead of spending more.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from actors.runtime.llm.types import LlmRequest
from actors.tasks.journal import Journal
from actors.tasks.result import TaskResult, complete, failed, from_error
from actors.tasks.sexp.evaluator import plain
from events.effects import LlmFailed, ToolReturned


@dataclass(frozen=True)
class HandlerPayload:
    """What the AtomicTaskExecutor hands the Handler: a fully substituted prompt."""

    task: str
    system: str
    prompt: str
    files: dict[str, str] = field(default_factory=dict)
    context: str = ""
    output_format: str = "text"  # "text" | "json"
    output_schema: dict[str, Any] | None = None
    tools: tuple[str, ...] = ()
    history: tuple[dict[str, Any], ...] = ()


class Handler:
    def __init__(
        self,
        journal: Journal,
        *,
        model: str,
        llm_params: dict[str, Any],
        tools: Collection[str],
        max_turns: int = 3,
        max_tokens: int = 8000,
    ) -> None:
        self.journal = journal
        self.model = model
        self.llm_params = dict(llm_params)
        self.tools = frozenset(tools)
        self.max_turns = max_turns
        self.max_tokens = max_tokens
        self.turns = 0
        self.tokens = 0

    # -- direct tools -----------------------------------------------------------------------

    def has_tool(self, name: str) -> bool:
        return name in self.tools

    def execute_tool(self, name: str, args: dict[str, Any]) -> TaskResult:
        if name not in self.tools:
            return failed("tool_not_found", "unknown_tool", f"no direct tool named {name!r}")
        return tool_result(self.journal.tool(name, plain(args)))  # JSON-able, as the log records it

    def read_files(self, paths: list[str]) -> TaskResult:
        """Files as `{path: text}` in the content; FAILED if any cannot be read."""
        result = self.execute_tool("system:read_files", {"paths": list(paths)})
        if result.ok and result.notes.get("errors"):
            errors = result.notes["errors"]
            first = next(iter(errors))
            return failed(
                "tool_error", "read_failed", f"cannot read {first}: {errors[first]}", {"errors": errors}
            )
        return result

    # -- the LLM ------------------------------------------------------------------------------

    def execute_prompt(self, payload: HandlerPayload) -> TaskResult:
        messages = [{"role": "system", "content": payload.system or "You are a helpful assistant."}]
        messages += [dict(m) for m in payload.history]
        messages.append({"role": "user", "content": _user_message(payload)})
        wants_json = payload.output_format == "json" or bool(payload.tools)
        schema = payload.output_schema if payload.output_schema is not None else ({"type": "object"} if wants_json else None)
        while True:
            if self.turns >= self.max_turns:
                return self._exhausted("turns", f"{payload.task} used its {self.max_turns} turn(s) without a usable answer")
            outcome = self.journal.llm(
                LlmRequest(model=self.model, messages=messages, params=self.llm_params, response_schema=schema)
            )
            self.turns += 1
            if isinstance(outcome, LlmFailed):
                return from_error(outcome.error, **self._usage())
            self.tokens += outcome.prompt_tokens + outcome.completion_tokens
            if self.tokens > self.max_tokens:
                return self._exhausted("tokens", f"{payload.task} used {self.tokens} tokens, its limit is {self.max_tokens}")
            if not wants_json:
                return complete(outcome.content.strip(), **self._usage())
            parsed = outcome.parsed
            messages.append({"role": "assistant", "content": outcome.content})
            if parsed is None:
                messages.append({"role": "user", "content": "That was not a JSON object. Reply with one JSON object only."})
                continue
            if parsed.get("status") == "CONTINUATION" and isinstance(parsed.get("subtask_request"), dict):
                return TaskResult(
                    status="CONTINUATION",
                    content=parsed.get("content"),
                    notes={"subtask_request": parsed["subtask_request"], **self._usage()},
                )
            if payload.tools and isinstance(parsed.get("tool"), str):
                observation = self._use_tool(parsed["tool"], parsed.get("args"), payload.tools)
                messages.append({"role": "user", "content": f"Observation:\n{observation}"})
                continue
            content = parsed.get("result", parsed) if payload.tools else parsed
            return complete(content, **self._usage())

    def chat(self, system: str, history: list[dict[str, Any]], question: str) -> TaskResult:
        """Passthrough (seed 001 flow 1): one plain answer to a question, with history."""
        payload = HandlerPayload(task="passthrough", system=system, prompt=question, history=tuple(history))
        return self.execute_prompt(payload)

    # -- internals ----------------------------------------------------------------------------

    def _use_tool(self, name: str, args: Any, allowed: tuple[str, ...]) -> str:
        if name not in allowed:
            return f"Error: no tool {name!r}; the tools are {', '.join(allowed)}"
        if not isinstance(args, dict):
            return 'Error: args must be a JSON object, e.g. {"tool": "...", "args": {...}}'
        result = self.execute_tool(name, args)
        if not result.ok:
            return f"Error: {result.error.line() if result.error else result.status}"
        text = result.content if isinstance(result.content, str) else json.dumps(result.content, ensure_ascii=False)
        return text[:6000]

    def _usage(self) -> dict[str, Any]:
        return {"turns": self.turns, "tokens": self.tokens}

    def _exhausted(self, reason: str, message: str) -> TaskResult:
        details = {"turns": self.turns, "max_turns": self.max_turns, "tokens": self.tokens, "max_tokens": self.max_tokens}
        return failed("resource_exhaustion", reason, message, details, **self._usage())


def _user_message(payload: HandlerPayload) -> str:
    parts: list[str] = []
    if payload.context:
        parts.append(f"Context:\n{payload.context}")
    for path, text in payload.files.items():
        parts.append(f"File {path}:\n```\n{text}\n```")
    parts.append(payload.prompt)
    if payload.tools:
        parts.append(
            "You may use these tools: " + ", ".join(payload.tools) + '. To use one, reply {"tool": NAME, "args": {...}}; '
            'when you are done, reply {"result": YOUR ANSWER}.'
        )
    elif payload.output_format == "json":
        parts.append("Reply with one JSON object only.")
    return "\n\n".join(parts)


def tool_result(returned: ToolReturned) -> TaskResult:
    """A recorded tool result as a TaskResult."""
    if not returned.ok:
        error = returned.error
        if error is None:
            return failed("tool_error", "failed", returned.output)
        return from_error(error, tool=returned.tool)
    if returned.tool == "system:run_script":
        return _script_result(returned.output)
    if returned.tool == "system:read_files":
        data = json.loads(returned.output)
        files, errors = data.get("files", {}), data.get("errors", {})
        if errors and not files:
            first = next(iter(errors))
            return failed("tool_error", "read_failed", f"cannot read {first}: {errors[first]}", {"errors": errors})
        return complete(files, errors=errors) if errors else complete(files)
    return complete(returned.output, tool=returned.tool)


def _script_result(output: str) -> TaskResult:
    data = json.loads(output)
    notes = {"exit_code": data["exit_code"], "stderr": data["stderr"]}
    if data.get("timed_out"):
        return failed(
            "script_error",
            "timeout",
            f"the script did not finish within {data['timeout_s']:g}s; it and everything it started were killed",
            {"stdout": data["stdout"][-2000:], "stderr": data["stderr"][-2000:]},
        )
    if data["exit_code"] != 0:
        last = (data["stderr"].strip().splitlines() or [""])[-1]
        return failed(
            "script_error",
            "exit_code",
            f"the script exited with status {data['exit_code']}" + (f": {last}" if last else ""),
            {"exit_code": data["exit_code"], "stdout": data["stdout"][-2000:], "stderr": data["stderr"][-2000:]},
        )
    return complete(data["stdout"], **notes)
