"""The Researcher (seed 000 §2.2, flow §4): index the repository, decompose the objective
into a plan, run the ReAct loop over registered tools, write a markdown report.

A pure behaviour around the ReAct agent's: it owns the phases before and after the loop
(indexing → planning → running → reporting) and hands the loop's commands and events to
`ReactAgent`, whose state it keeps nested. Every effect goes through `next_effect`, so the
indexing (a call of the `index_repository` tool), the plan, every search and the report are
all recorded in the run's log and replay without repository, embedder or model.

Its status moves through seed 000's ResearchHistory statuses by its events:
ResearchRequested (PENDING) → IndexingStarted (INDEXING) → IndexingCompleted or
ResearchStarted (RUNNING) → ReportWritten (COMPLETED) | ResearchFailed (FAILED).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from actors.agent.lookups import FIND_DEFINITION, RULES, opening_lookup, reads_code
from actors.agent.react import BUDGET_ERRORS, AgentState, ReactAgent
from actors.agent.react import next_effect as agent_next_effect
from actors.research import prompts
from actors.runtime.behaviour import Behaviour, Command
from actors.runtime.effects import CallLlm, CallTool, LlmReturned, Stop, StopAgent, ToolFinished
from actors.runtime.registry import Registry
from events.agent import AgentFailed, AgentStarted, AnswerGiven, ToolSpec
from events.base import Event, State
from events.effects import LlmCompleted, LlmFailed, ToolCalled, ToolReturned
from events.errors import ErrorInfo
from events.research import (
    IndexingCompleted,
    IndexingStarted,
    PlanMade,
    ReportWritten,
    ResearchFailed,
    ResearchRequested,
    ResearchStarted,
)
from events.runs import Budget, BudgetExceeded

Phase = Literal["new", "indexing", "planning", "running", "reporting", "completed", "failed"]
INDEXER = "index_repository"
DEFAULT_TOOLS = ("repository_search", "find_definition", "read_file", "search_files")
NO_REPO_TOOLS = ("search_files", "find_definition", "read_file")


class StartResearch(Command):
    objective: str
    repo_url: str | None = None
    root: str = ""
    tools: list[ToolSpec] = []
    max_iterations: int = 10
    model: str = ""
    params: dict[str, Any] = {}
    budget: Budget = Budget()
    grounded: bool = False
    lookups: bool = False
    states_answer: bool = False
    rules: int = 0


class ResearchState(State):
    status: Phase = "new"
    objective: str = ""
    repo_url: str | None = None
    root: str = ""
    agent_tools: list[ToolSpec] = []
    max_iterations: int = 10
    model: str = ""
    params: dict[str, Any] = {}
    budget: Budget = Budget()
    grounded: bool = False
    lookups: bool = False
    states_answer: bool = False
    rules: int = 0
    plan: list[str] = []
    index_summary: str = ""
    agent: AgentState = AgentState()
    llm_calls: int = 0
    tokens: int = 0
    tool_calls: int = 0
    answer: str | None = None  # the final report
    error: ErrorInfo | None = None

    @property
    def tools(self) -> list[ToolSpec]:
        """Every tool this run may call (the agent actor creates them on first use)."""
        indexer = [_indexer_spec()] if self.repo_url else []
        return indexer + list(self.agent_tools)

    @property
    def finished(self) -> bool:
        return self.status in ("completed", "failed")


def _indexer_spec() -> ToolSpec:
    cls: Any = Registry.tool_class(INDEXER)
    return ToolSpec(name=INDEXER, signature=cls.signature(), description=cls.description,
                    topic=f"{cls.__module__}:{cls.__qualname__}")


def failed(reason: str, message: str, type_: str = "research_error") -> ErrorInfo:
    return ErrorInfo(type=type_, reason=reason, message=message)


@Registry.register_agent("researcher")
class Researcher(Behaviour[ResearchState]):
    name = "researcher"
    state_type = ResearchState
    default_tools = DEFAULT_TOOLS

    @classmethod
    def tools_for(cls, repo: str | None) -> tuple[str, ...]:
        """Without a repository there is no index to search: the file tools only."""
        return DEFAULT_TOOLS if repo else NO_REPO_TOOLS

    def __init__(self) -> None:
        self.react = ReactAgent()

    # -- what the world must do next ---------------------------------------------------------

    def next_effect(self, state: ResearchState) -> CallLlm | CallTool | Stop | None:
        if state.status == "indexing":
            return CallTool(tool=INDEXER, args={"source": state.repo_url}, call_index=state.tool_calls + 1)
        if state.status == "planning":
            tools = [t.name for t in state.agent_tools] if state.grounded else None
            request = prompts.plan_request(state.objective, state.repo_url, state.model, state.params, tools=tools)
            return CallLlm(request=request, call_index=state.llm_calls + 1)
        if state.status == "running":
            effect = agent_next_effect(state.agent)
            # The loop's calls are numbered in the run's sequence, after the plan's.
            if isinstance(effect, CallLlm):
                return effect.model_copy(update={"call_index": state.llm_calls + 1})
            if isinstance(effect, CallTool):
                return effect.model_copy(update={"call_index": state.tool_calls + 1})
            return effect
        if state.status == "reporting":
            a = state.agent
            request = prompts.report_request(state.objective, state.plan, a.history, a.answer, state.model, state.params)
            return CallLlm(request=request, call_index=state.llm_calls + 1)
        return None

    def start_command(self, started: Event, key: str = "start") -> StartResearch:
        assert isinstance(started, ResearchRequested)
        return StartResearch(key=key, **started.payload())

    @classmethod
    def make_start(cls, *, goal: str, root: str, tools: list[ToolSpec], repo: str | None = None, **kw: Any) -> StartResearch:
        kw.setdefault("grounded", reads_code(tools))
        kw.setdefault("lookups", bool(kw["grounded"]) and FIND_DEFINITION in [t.name for t in tools])
        kw.setdefault("states_answer", bool(kw["grounded"]))
        kw.setdefault("rules", RULES if kw["lookups"] else 0)
        return StartResearch(key="start", objective=goal, repo_url=repo, root=root, tools=tools, **kw)

    # -- decide ---------------------------------------------------------------------------

    def decide(self, state: ResearchState, command: Command) -> list[Event]:
        if isinstance(command, StartResearch):
            if state.status != "new":
                return []
            requested = ResearchRequested(**command.model_dump(exclude={"key"}))
            if command.repo_url:
                return [requested, IndexingStarted(repo_url=command.repo_url)]
            return [requested, ResearchStarted(lead_stream="")]
        if state.finished:
            return []
        if isinstance(command, StopAgent):
            if state.status == "running":
                out = self.react.decide(state.agent, command)
            else:  # the plan or the report refused by the run's budget
                out = [BudgetExceeded(error=command.error)] if command.error.type in BUDGET_ERRORS else []
            return out + [ResearchFailed(error=command.error)]
        if state.status == "indexing" and isinstance(command, ToolFinished):
            return self._indexed(command.events)
        if state.status == "planning" and isinstance(command, LlmReturned):
            return self._planned(state, command.events)
        if state.status == "running":
            out = self.react.decide(state.agent, command)
            end = next((e for e in out if isinstance(e, AgentFailed)), None)
            if end is not None and end.error.type != "iteration_limit":
                out.append(ResearchFailed(error=end.error))  # the report needs a working model
            return out
        if state.status == "reporting" and isinstance(command, LlmReturned):
            result = command.events[-1]
            if isinstance(result, LlmFailed):
                return [*command.events, ResearchFailed(error=result.error)]
            assert isinstance(result, LlmCompleted)
            stated = prompts.stated_answer(state.agent.answer) if state.states_answer else None
            report = prompts.final_report(result.content, state.agent.history, answer=stated)
            return [*command.events, ReportWritten(final_report=report)]
        raise TypeError(f"researcher cannot handle {type(command).__name__} while {state.status}")

    def _indexed(self, recorded: list[Event]) -> list[Event]:
        returned = recorded[-1]
        assert isinstance(returned, ToolReturned)
        if not returned.ok:
            error = returned.error or failed("indexing_failed", returned.output.removeprefix("Error: "))
            message = error.message.removeprefix(f"{error.reason}: ")  # the reason says it already
            error = error.model_copy(update={"type": "indexing_failed", "message": message})
            return [*recorded, ResearchFailed(error=error)]
        try:
            report = json.loads(returned.output)
            done = IndexingCompleted(
                files=report["files"],
                chunks=report["chunks"],
                root=report["root"],
                collection=report["collection"],
                files_unchanged=report.get("files_unchanged", 0),
                skipped=report.get("skipped_binary", 0) + report.get("skipped_large", 0),
                summary=_summary(report),
            )
        except (ValueError, KeyError, TypeError) as e:
            return [*recorded, ResearchFailed(error=failed("indexing_failed", f"unreadable index report: {e}"))]
        return [*recorded, done]

    def _planned(self, state: ResearchState, recorded: list[Event]) -> list[Event]:
        result = recorded[-1]
        if isinstance(result, LlmFailed):
            return [*recorded, ResearchFailed(error=result.error)]
        assert isinstance(result, LlmCompleted)
        plan = prompts.parse_plan(result.parsed, result.content, state.objective)
        if state.grounded:
            plan = prompts.tool_plan(plan, [t.name for t in state.agent_tools], state.objective)
        start = AgentStarted(
            goal=prompts.agent_goal(state.objective, plan),
            root=state.root,
            tools=state.agent_tools,
            max_iterations=state.max_iterations,
            model=state.model,
            params=state.params,
            budget=state.budget,
            grounded=state.grounded,
            lookups=state.lookups,
            rules=state.rules,
        )
        first = opening_lookup(state.objective, [t.name for t in state.agent_tools], state.rules) if state.lookups else None
        return [*recorded, PlanMade(steps=plan), start, *([first] if first else [])]

    # -- evolve ---------------------------------------------------------------------------

    def evolve(self, state: ResearchState, event: Event) -> ResearchState:
        up: dict[str, Any] = {}
        if isinstance(event, (LlmCompleted, LlmFailed)):
            up["llm_calls"] = state.llm_calls + 1
            if isinstance(event, LlmCompleted):
                up["tokens"] = state.tokens + event.prompt_tokens + event.completion_tokens
        elif isinstance(event, ToolCalled):
            up["tool_calls"] = state.tool_calls + 1
        if state.status == "running" or isinstance(event, AgentStarted):
            up["agent"] = self.react.evolve(state.agent, event)
        if isinstance(event, ResearchRequested):
            up.update(
                status="indexing" if event.repo_url else "planning",
                objective=event.objective, repo_url=event.repo_url, root=event.root,
                agent_tools=event.tools, max_iterations=event.max_iterations, model=event.model,
                params=event.params, budget=event.budget, grounded=event.grounded, lookups=event.lookups,
                states_answer=event.states_answer, rules=event.rules,
            )
        elif isinstance(event, IndexingCompleted):
            up.update(status="planning", root=event.root, index_summary=event.summary)
        elif isinstance(event, PlanMade):
            up["plan"] = event.steps
        elif isinstance(event, AgentStarted):
            up["status"] = "running"
        elif isinstance(event, AnswerGiven) or (
            isinstance(event, AgentFailed) and event.error.type == "iteration_limit"
        ):
            up["status"] = "reporting"
        elif isinstance(event, ReportWritten):
            up.update(status="completed", answer=event.final_report)
        elif isinstance(event, ResearchFailed):
            up.update(status="failed", error=event.error)
        return state.model_copy(update=up)


def _summary(report: dict[str, Any]) -> str:
    skipped = report.get("skipped_binary", 0) + report.get("skipped_large", 0)
    return (
        f"{report['files']} files, {report['chunks']} chunks; {report.get('files_embedded', 0)} files embedded, "
        f"{report.get('files_unchanged', 0)} unchanged and skipped; {skipped} binary or huge files skipped"
    )

