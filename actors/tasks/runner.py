"""A workflow as a run: prepare its start (checking the input first), submit it, serve it.

`prepare` does everything that can refuse bad input before anything is written: it parses
an S-expression (ParseError says line and column), loads and validates templates, checks
the workspace, and reads the memory index. `submit` records the run; `serve` runs it to the
end and closes the run — the same code in the Ray actor, in tests and in scripts.

Tool calls made by a workflow (direct tools, and tools the Handler uses for a template) have
a timeout, as agent runs' tool calls do: a call with no result by then is a failed tool
result (recorded like any other), not a hung workflow. `system:run_script` keeps its own
timeout, which also kills the script.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from actors.runtime.budget import close_ledger, open_ledger, run_usage
from actors.runtime.llm.gateway import LlmGateway
from actors.runtime.perform import LiveEffects, ToolInvoker, local_invoker
from actors.runtime.run import Complete, Fail, RunLifecycle, Start, Submit, run_stream
from actors.runtime.shell import ActorShell
from actors.tasks.dispatcher import is_sexp
from actors.tasks.fork import fork_effects
from actors.tasks.matching import match_template
from actors.tasks.memory import MATCHING_TASK, index_workspace
from actors.tasks.result import TaskResult
from actors.tasks.sexp.parser import Symbol, parse_program
from actors.tasks.templates import (
    AtomicTemplate,
    TemplateError,
    builtin_sources,
    load_dir,
    parse_template,
)
from actors.tasks.tools import tool_names, workspace_tools
from actors.tasks.workflow import (
    ForkWorkflow,
    StartWorkflow,
    WorkflowBehaviour,
    eval_limits,
    execute_workflow,
    task_stream,
)
from events.base import Event
from events.errors import ErrorInfo
from events.runs import Budget
from events.store import EventStore

KIND = "task"  # RunSubmitted.kind of workflow runs: the name of their RunKind
DEFAULT_LLM_PARAMS = {"temperature": 0.0, "max_tokens": 512}
WORLD_FORMS = frozenset({"call", "get_context"})
IDENTIFIER = re.compile(r"[^\s()\"';]+\Z")
TOOL_TIMEOUT_S = 120  # as agent runs' tool calls (`actors.runtime.perform.ray_invoker`)
TOOL_TIMEOUT_LIMIT = "max_tool_seconds"  # the key in `limits` that overrides it
SELF_TIMED_TOOLS = frozenset({"system:run_script"})  # its own timeout (up to 600 s) also kills the script


class ToolTimeout(TimeoutError):
    """A tool call gave no result within the workflow's tool timeout."""


def _clip(text: str, n: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def prepare(
    text: str,
    *,
    kind: str | None = None,
    params: Mapping[str, Any] | None = None,
    template_dirs: Iterable[str | Path] = (),
    templates: Mapping[str, str] | None = None,
    workspace: str | Path = ".",
    index: Mapping[str, str] | str | Path | None = None,
    history: list[dict[str, Any]] | None = None,
    model: str = "",
    llm_params: Mapping[str, Any] | None = None,
    limits: Mapping[str, Any] | None = None,
) -> StartWorkflow:
    """The start of a workflow, or ValueError (ParseError, TemplateError, ...) for bad input."""
    if not text.strip():
        raise ValueError("nothing to run: give an S-expression, a task or tool name, or a question")
    kind = kind or ("sexp" if is_sexp(text) else "task" if IDENTIFIER.match(text.strip()) else "request")
    if kind == "sexp":
        parse_program(text)  # ParseError: line, column, what was expected
    elif kind == "task" and not IDENTIFIER.match(text.strip()):
        raise ValueError(
            f"{_clip(text)!r} is neither an S-expression (those start with '(') nor a task or tool name"
        )
    root = Path(workspace).expanduser().resolve()
    if not root.is_dir():
        raise ValueError(f"workspace folder {workspace} does not exist")
    sources = dict(builtin_sources())
    for folder in template_dirs:
        sources.update(load_dir(folder))
    for name, source in (templates or {}).items():
        sources[parse_template(source, f"template {name}").name] = source
    for key, value in (limits or {}).items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ValueError(f"limit {key} must be a positive integer, not {value!r}")
    eval_limits(dict(limits or {}))  # ValueError for a limit out of range (max_int_bits, ...)
    if kind == "task":
        _known_task(text.strip(), sources)
    return StartWorkflow(
        key="start",
        kind=kind,  # type: ignore[arg-type]
        text=text,
        params=dict(params or {}),
        templates=sources,
        tools=tool_names(),
        memory_index=_index(index, root),
        history=list(history or []),
        workspace=str(root),
        model=model,
        llm_params=dict(DEFAULT_LLM_PARAMS if llm_params is None else llm_params),
        limits={k: v for k, v in (limits or {}).items() if v is not None},
    )


def _known_task(name: str, sources: Mapping[str, str]) -> None:
    """ValueError unless `name` is an atomic task or a direct tool, listing the known ones."""
    tasks = {parse_template(src, f"template {key}").name for key, src in sources.items()}
    tools = set(tool_names())
    if name not in tasks and name not in tools:
        raise ValueError(
            f"no atomic task or direct tool named {_clip(name)!r}; "
            f"tasks: {', '.join(sorted(tasks)) or 'none'}; tools: {', '.join(sorted(tools)) or 'none'}"
        )


def _index(index: Mapping[str, str] | str | Path | None, root: Path) -> dict[str, str]:
    if index is None:
        return {}
    if isinstance(index, Mapping):
        return {str(k): str(v) for k, v in index.items()}
    if str(index) == "auto":
        return index_workspace(root)
    try:
        data = json.loads(Path(index).expanduser().read_text())
    except (OSError, ValueError) as e:
        raise ValueError(f"cannot read the memory index {index}: {e}") from None
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise ValueError(f"the memory index {index} must be a JSON object of path -> description")
    return data


def needs_llm(start: StartWorkflow) -> bool:
    """Could this workflow call a model? (If not, no model server need be started.)"""
    if start.kind == "query":
        return True
    if start.kind == "task":
        return start.text.strip() in _template_names(start)
    if start.kind == "request":
        pool = [t for t in _templates(start) if t.name != MATCHING_TASK]
        return match_template(start.text, pool, start.params) is not None
    names = _template_names(start) | WORLD_FORMS
    return any(isinstance(s, Symbol) and s.name in names for s in _atoms(parse_program(start.text)))


def _templates(start: StartWorkflow) -> list[AtomicTemplate]:
    try:
        return [parse_template(src) for src in start.templates.values()]
    except TemplateError:
        return []


def _template_names(start: StartWorkflow) -> set[str]:
    try:
        return {parse_template(src).name for src in start.templates.values()}
    except TemplateError:
        return set(start.templates)


def _atoms(forms: Any) -> Iterable[Any]:
    for f in forms:
        if isinstance(f, list):
            yield from _atoms(f)
        else:
            yield f


def submit(
    store: EventStore, run_id: str, start: StartWorkflow, forked_from: str | None = None, budget: Budget | None = None
) -> ActorShell[Any]:
    """Record the run (RunSubmitted); refuses a run id in use. `forked_from` is `RUN@POSITION`."""
    run = ActorShell(RunLifecycle(), run_stream(run_id), store, run_id=run_id).load()
    if run.state.status != "new":
        raise ValueError(f"run {run_id} exists already")
    run.handle(
        Submit(
            key="submit",
            goal=start.text,
            kind=KIND,
            params={"kind": start.kind, "params": start.params, "workspace": start.workspace},
            budget=budget or Budget(),
            forked_from=forked_from,
        )
    )
    return run


def serve(
    store: EventStore,
    run_id: str,
    start: StartWorkflow,
    provider: Any,
    *,
    tools: Mapping[str, Any] | None = None,
    on_events: Callable[[list[Event]], None] | None = None,
    fork: ForkWorkflow | None = None,
    tool_timeout_s: float | None = None,
) -> TaskResult:
    """Run a submitted workflow to its end (or resume it) and close the run. With `fork`
    (from `actors.tasks.fork.plan_fork`), the workflow is a fork of another run's. A tool
    call gets `tool_timeout_s` (default: the start's `limits["max_tool_seconds"]`, else
    TOOL_TIMEOUT_S) to give its result."""
    run = ActorShell(RunLifecycle(), run_stream(run_id), store, run_id=run_id).load()
    shell = ActorShell(WorkflowBehaviour(), task_stream(run_id), store, run_id=run_id).load()
    shell.handle(start, causation_id=run.last_event_id)
    if fork is not None:
        shell.handle(fork, causation_id=shell.last_event_id)
    run.handle(Start(key="start", lead_stream=shell.stream_id), causation_id=shell.last_event_id)
    if tool_timeout_s is None:
        tool_timeout_s = float(shell.state.limits.get(TOOL_TIMEOUT_LIMIT) or TOOL_TIMEOUT_S)
    invoke = timed_invoker(
        local_invoker(tools if tools is not None else workspace_tools(shell.state.workspace)), tool_timeout_s
    )
    ledger = open_ledger(store, run_id, streams=[shell.stream_id])  # the run's budget, as its log left it
    effects: Any = LiveEffects(LlmGateway(provider), invoke, ledger)
    if shell.state.fork:
        effects = fork_effects(store, shell.state.fork, effects)
    try:
        result = execute_workflow(shell, effects, on_events)
    except Exception as e:
        close_ledger(ledger)
        error = ErrorInfo(type="runtime_error", reason=type(e).__name__, message=str(e)[:500])
        run.handle(Fail(key="finish", error=error), causation_id=shell.last_event_id)
        _snapshot(shell, run)
        raise
    close_ledger(ledger)
    used = run_usage(store, run_id, [shell.stream_id])  # the run's totals are its log's (the audit view's)
    if result.status == "FAILED":
        error = result.error or ErrorInfo(type="task_failed", reason="failed", message=result.line())
        run.handle(Fail(key="finish", error=error), causation_id=shell.last_event_id)
    else:
        run.handle(
            Complete(key="finish", result=result_text(result), llm_calls=used.calls, tokens=used.tokens),
            causation_id=shell.last_event_id,
        )
    _snapshot(shell, run)
    return result


def timed_invoker(invoke: ToolInvoker, timeout_s: float, exempt: frozenset[str] = SELF_TIMED_TOOLS) -> ToolInvoker:
    """`invoke`, but a call (other than `exempt` tools) with no result within `timeout_s`
    raises ToolTimeout, which the effects record as a failed tool result. The late call is
    left to finish on its own daemon thread; its result is dropped."""

    def call(name: str, args: dict[str, Any]) -> str:
        if name in exempt:
            return invoke(name, args)
        outcome: list[tuple[bool, Any]] = []

        def work() -> None:
            try:
                outcome.append((True, invoke(name, args)))
            except BaseException as e:  # noqa: BLE001 - handed over to the caller's thread below
                outcome.append((False, e))

        worker = threading.Thread(target=work, name=f"tool {name}", daemon=True)
        worker.start()
        worker.join(timeout_s)
        if not outcome:
            raise ToolTimeout(f"{name} gave no result within {timeout_s:g} s (the tool timeout)")
        ok, value = outcome[0]
        if not ok:
            raise value
        return value  # type: ignore[no-any-return]

    return call


def _snapshot(*shells: ActorShell[Any]) -> None:
    """Snapshot the workflow and its run as they finish: their final states become views."""
    for shell in shells:
        shell.snapshot()


def result_text(result: TaskResult) -> str:
    if isinstance(result.content, str):
        return result.content
    return json.dumps(result.content, ensure_ascii=False, default=str)


def task_result(store: EventStore, run_id: str) -> TaskResult | None:
    """A finished workflow's TaskResult, from its log."""
    shell = ActorShell(WorkflowBehaviour(), task_stream(run_id), store, run_id=run_id).load()
    return shell.state.result
