"""The ReAct agent's pure core (seed 000 §2.2, seed 003's orchestrator).

Thought → Action → Observation. `next_effect(state)` says what the world must do next
(call the model, call a tool, or stop for a budget); the shell does it, records the
result as events, and hands them back in a command; `decide` turns recorded results into
the agent's decisions. Nothing here touches Ray, a clock or the network, so a run
replays from its log exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, model_validator

from actors.agent.evidence import is_not_found
from actors.agent.lookups import (
    FIND_DEFINITION,
    LOOKUP_LIMIT,
    MAX_LOOKUPS,
    NOT_IN_DEFINITION,
    NOT_LOOKED,
    READ_FILE,
    answer_first,
    looked,
    named_scope,
    new_patches,
    opening_lookup,
    opening_read,
    own_lookups,
    question_of,
    reads_code,
)
from actors.agent.patches import check_patches, lookup_patched, patched
from actors.agent.verify import check_answer, lookup_name
from actors.agent.policy import format_observation, is_repeat, repeat_observation, wrap_answer
from actors.agent.parsing import argless_tools, parse_step
from actors.agent.prompts import MAX_CONDENSED, AgentStep, HistoryItem, StepProblem, build_messages, step_schema
from actors.runtime.behaviour import Behaviour, Command
from actors.runtime.effects import CallLlm, CallTool, LlmReturned, Stop, StopAgent, ToolFinished
from actors.runtime.registry import Registry
from actors.runtime.llm.types import LlmRequest
from actors.agent.events import (
    AgentFailed,
    AgentForked,
    AgentStarted,
    AnswerGiven,
    StepDecided,
    StepRejected,
    ToolSpec,
    revision_patches,
)
from events.base import Event, State
from events.debug import PromptEdited
from events.effects import LlmCompleted, LlmFailed, ToolCalled, ToolReturned
from events.errors import ErrorInfo
from events.runs import Budget, BudgetExceeded

AgentStatus = Literal["new", "running", "completed", "failed"]
STUCK_AFTER = 2  # rejected steps in a row before the agent must answer
# Steps the state keeps: what the prompt shows (condensed + verbatim) and a margin for
# repeat detection. Bounded, so snapshots of a long run do not grow with it.
HISTORY_KEPT = MAX_CONDENSED + 8


class PendingStep(BaseModel):
    model_config = ConfigDict(frozen=True)

    iteration: int
    thought: str
    action: str
    args: dict[str, Any]
    auto: bool = False


class PromptEdit(BaseModel):
    """A person's prompt for one LLM call of a fork (events/debug.py PromptEdited): sent in
    place of the prompt the agent would have built for that call."""

    model_config = ConfigDict(frozen=True)

    call_index: int
    messages: list[dict[str, Any]]


class AgentState(State):
    status: AgentStatus = "new"
    goal: str = ""
    root: str = ""
    tools: list[ToolSpec] = []
    max_iterations: int = 10
    model: str = ""
    params: dict[str, Any] = {}
    budget: Budget = Budget()
    grounded: bool = False
    lookups: bool = False
    patches: list[str] = []
    history: list[HistoryItem] = []  # the most recent HISTORY_KEPT steps
    steps_dropped: int = 0  # older steps, no longer in the state
    pending: PendingStep | None = None
    iteration: int = 0
    rejected_in_a_row: int = 0
    last_thought: str = ""
    same_thought_in_a_row: int = 0  # the model restating itself: it has what it needs
    llm_calls: int = 0
    tokens: int = 0
    tool_calls: int = 0
    started_at: datetime | None = None
    last_at: datetime | None = None
    answer: str | None = None
    error: ErrorInfo | None = None
    prompt_edit: PromptEdit | None = None  # a fork's edited prompt, until that call is made

    @model_validator(mode="before")
    @classmethod
    def _rule_revision(cls, data: Any) -> Any:
        """A snapshot taken when the state held the rule revision (`rules`): its patches; one
        taken before definition_checks was a patch: a run with lookups has it (`lookup_patched`)."""
        if isinstance(data, dict) and "rules" in data:
            rules = int(data.get("rules") or 0)
            data = {k: v for k, v in data.items() if k != "rules"}
            data.setdefault("patches", revision_patches(rules))
        if isinstance(data, dict) and data.get("lookups"):
            data = {**data, "patches": lookup_patched(data.get("patches") or [], True)}
        return data

    @property
    def tool_names(self) -> list[str]:
        return [t.name for t in self.tools]

    @property
    def finished(self) -> bool:
        return self.status in ("completed", "failed")


# -- commands ---------------------------------------------------------------------------


class StartAgent(Command):
    goal: str
    root: str
    tools: list[ToolSpec]
    max_iterations: int = 10
    model: str = ""
    params: dict[str, Any] = {}
    budget: Budget = Budget()
    grounded: bool = False
    lookups: bool = False
    patches: list[str] = []


# The agent's own limits (its counters, checked in `next_effect`) end a run as "budget_exceeded";
# the run-wide ledger refusing a call (`actors.runtime.ledger`) as "budget_exhausted".
BUDGET_ERRORS = ("budget_exceeded", "budget_exhausted")


def budget_error(reason: str, message: str) -> ErrorInfo:
    return ErrorInfo(type="budget_exceeded", reason=reason, message=message)


def must_answer(state: AgentState) -> bool:
    """Whether the next step may only be the answer: the last iteration, or the model stuck
    (steps rejected in a row, or the same thought again)."""
    return (
        state.iteration + 1 >= state.max_iterations
        or state.rejected_in_a_row >= STUCK_AFTER
        or state.same_thought_in_a_row >= 1
    )


def next_effect(state: AgentState, prompt: Callable[..., list[dict[str, str]]] | None = None) -> CallLlm | CallTool | Stop | None:
    """What the shell must do next for this agent; None once it has finished. `prompt` builds
    the messages (default `build_messages`; an agent built on this loop brings its own)."""
    if state.status != "running":
        return None
    budget = state.budget
    if budget.max_wall_seconds is not None and state.started_at and state.last_at:
        elapsed = (state.last_at - state.started_at).total_seconds()
        if elapsed > budget.max_wall_seconds:
            return Stop(
                error=budget_error(
                    "wall_time", f"run took {elapsed:.1f}s, over its {budget.max_wall_seconds:g}s budget"
                )
            )
    if state.pending is not None:
        return CallTool(
            tool=state.pending.action, args=state.pending.args, call_index=state.tool_calls + 1
        )
    if budget.max_llm_calls is not None and state.llm_calls >= budget.max_llm_calls:
        return Stop(
            error=budget_error(
                "llm_calls", f"{state.llm_calls} LLM calls made, the budget allows {budget.max_llm_calls}"
            )
        )
    tools = [(t.name, t.signature, t.description) for t in state.tools]
    # A model that keeps proposing steps we will not run (repeats, unparseable replies) is
    # stuck: make it answer with what it has, rather than spend the remaining iterations.
    # The same thought twice in a row means the model is going round: answer now too.
    last = must_answer(state)
    grounded: dict[str, Any] = {"grounded": True} if state.grounded else {}  # runs from before grounding: their prompt
    if not state.grounded and patched(state, "files_prompt"):  # runs from before the patch: their prompt
        grounded["files"] = True
    first = answer_first(state)
    if first:  # runs without patch answer_first: their prompt
        grounded["answer_first"] = True
    edit = state.prompt_edit
    if edit is not None and edit.call_index == state.llm_calls + 1:
        messages = edit.messages  # a person's prompt for this call (a fork with an edit)
    else:
        messages = (prompt or build_messages)(
            state.goal,
            tools,
            state.history,
            iteration=state.iteration + 1,
            max_iterations=state.max_iterations,
            force_answer=last,
            earlier_steps=state.steps_dropped,
            **grounded,
        )
    request = LlmRequest(
        model=state.model,
        messages=messages,
        params=state.params,
        # On the last iteration the grammar only allows "answer".
        response_schema=step_schema([] if last or first else state.tool_names),
    )
    return CallLlm(request=request, call_index=state.llm_calls + 1)


def _not_run(step: AgentStep, iteration: int, reason: str, observation: str) -> StepRejected:
    """The model's tool step, rejected: the observation tells the model why."""
    return StepRejected(
        iteration=iteration, thought=step.thought, action=step.action, args=step.args, reason=reason,
        observation=observation,
    )


# -- decide / evolve --------------------------------------------------------------------------


@Registry.register_agent("react")
class ReactAgent(Behaviour[AgentState]):
    name = "react"
    state_type = AgentState

    def next_effect(self, state: AgentState) -> CallLlm | CallTool | Stop | None:
        return next_effect(state, self.prompt)

    # Hooks for agents built on this loop (seed 003's orchestrator): the prompt, how a reply
    # is read as a step, and whether an answer may be given yet. All pure.
    def prompt(self, goal: str, tools: Any, history: Any, **options: Any) -> list[dict[str, str]]:
        return build_messages(goal, tools, history, **options)

    def parse(self, parsed: Any, content: str, tool_names: list[str], argless: Collection[str] = ()) -> AgentStep | StepProblem:
        """The step in a reply; `argless`: the tools that take no arguments (patch argless_tools)."""
        return parse_step(parsed, content, tool_names, argless=argless)

    def refuse_answer(self, state: AgentState) -> str | None:
        """An observation turning down an answer given now (the step is rejected and the
        model told why), or None to accept it. The plain agent accepts every answer."""
        return None

    default_tools: tuple[str, ...] = ("search_files", "find_definition", "read_file")
    # Whether a run's answers are grounded (quote a line, pass the verify step) unless the
    # submitter says (`grounded=`): the code-question orchestrator's are when it has a tool
    # that shows code; the plain agent answers questions about files in general, so not.
    grounded_by_default: bool = False

    @classmethod
    def make_start(cls, *, goal: str, root: str, tools: list[ToolSpec], **kw: Any) -> StartAgent:
        """The start command for a submitted goal (`Client.submit`)."""
        if kw.pop("repo", None):
            raise ValueError("the react agent takes no repository; use kind='researcher'")
        if kw.get("grounded") is None:
            kw["grounded"] = cls.grounded_by_default and reads_code(tools)
        kw.setdefault("lookups", bool(kw["grounded"]) and FIND_DEFINITION in [t.name for t in tools])
        if kw.get("patches") is None:
            kw["patches"] = new_patches(kw["grounded"], kw["lookups"])
        kw["patches"] = check_patches(lookup_patched(kw["patches"], kw["lookups"]))  # lookups bring their checks
        return StartAgent(key="start", goal=goal, root=root, tools=tools, **kw)

    def start_command(self, started: AgentStarted, key: str = "start") -> StartAgent:
        """The command that produced `started` (replay re-issues it)."""
        return StartAgent(key=key, **started.payload())

    def decide(self, state: AgentState, command: Command) -> list[Event]:
        if isinstance(command, StartAgent):
            if state.status != "new":
                return []
            check_patches(command.patches)  # a run recorded at a deleted rule revision stops here
            patches = lookup_patched(command.patches, command.lookups)  # a run with lookups has their checks
            started = AgentStarted(
                goal=command.goal,
                root=command.root,
                tools=command.tools,
                max_iterations=command.max_iterations,
                model=command.model,
                params=command.params,
                budget=command.budget,
                grounded=command.grounded,
                lookups=command.lookups,
                patches=patches,
            )
            names = [t.name for t in command.tools]
            first = opening_lookup(command.goal, names, patches) if command.lookups else None
            if first is None and not command.grounded and patched(patches, "files_prompt"):
                first = opening_read(command.goal, names, patches)
            return [started] if first is None else [started, first]
        if state.finished:
            return []
        if isinstance(command, StopAgent):
            out: list[Event] = []
            if command.error.type in BUDGET_ERRORS:
                out.append(BudgetExceeded(error=command.error))
            return out + [AgentFailed(error=command.error)]
        if isinstance(command, ToolFinished):
            return list(command.events)
        if isinstance(command, LlmReturned):
            return self._on_completion(state, command.events)
        raise TypeError(f"react agent cannot handle {type(command).__name__}")

    def _on_completion(self, state: AgentState, recorded: list[Event]) -> list[Event]:
        out = list(recorded)
        result = recorded[-1]
        if isinstance(result, LlmFailed):
            return out + [AgentFailed(error=result.error)]
        assert isinstance(result, LlmCompleted)
        tokens = state.tokens + result.prompt_tokens + result.completion_tokens
        limit = state.budget.max_tokens
        if limit is not None and tokens > limit:
            error = budget_error("tokens", f"{tokens} tokens used, the budget allows {limit}")
            return out + [BudgetExceeded(error=error), AgentFailed(error=error)]
        iteration = state.iteration + 1
        argless = argless_tools(state.tools) if patched(state, "argless_tools") else frozenset()
        step = self.parse(result.parsed, result.content, state.tool_names, argless=argless)
        if isinstance(step, StepProblem):
            out.append(
                StepRejected(
                    iteration=iteration,
                    thought="",
                    action="",
                    args={},
                    reason="unparseable",
                    observation=step.observation,
                )
            )
        elif step.action == "answer":
            text = str(step.args.get("answer", "")).strip()
            refused = self.refuse_answer(state) if text else None
            if text and refused is None and state.grounded and not looked(state) and not must_answer(state):
                refused = NOT_LOOKED
            if text and refused is None and answer_first(state) and is_not_found(text):
                refused = NOT_IN_DEFINITION  # asked to answer first: "not found" there means search on
            checked, read_next, follow = False, None, True
            if text and refused is None and state.grounded:
                verdict = check_answer(
                    question_of(state.goal), text, step.args, [h.observation for h in state.history],
                    forced=must_answer(state), scope=named_scope(state), patches=state.patches,
                )
                text, refused, checked = verdict.answer or text, verdict.observation or None, True
                read_next, follow = verdict.read or verdict.find, verdict.follow
            if text and refused is None:
                return out + [AnswerGiven(iteration=iteration, thought=step.thought, answer=wrap_answer(text))]
            out.append(
                StepRejected(
                    iteration=iteration,
                    thought=step.thought,
                    action="answer",
                    args=step.args,
                    reason="answer_refused" if text else "empty_answer",
                    observation=refused or 'Your answer was empty. Give the answer as {"answer": "..."} in args.',
                )
            )
            read = self._read_the_definition(state, text, iteration, read_next) if checked and follow else None
            if read is not None:  # the check failed: the agent reads the definition it needs, no model call
                out.append(read)
        elif state.lookups and step.action == FIND_DEFINITION and own_lookups(state) >= MAX_LOOKUPS:
            out.append(_not_run(step, iteration, "lookup_limit", LOOKUP_LIMIT))
        elif is_repeat(state.history, step.action, step.args):
            out.append(_not_run(step, iteration, "repeat", repeat_observation(state.history, step.action, step.args)))
        else:
            out.append(
                StepDecided(iteration=iteration, thought=step.thought, action=step.action, args=step.args)
            )
        if iteration >= state.max_iterations:
            out.append(
                AgentFailed(
                    error=ErrorInfo(
                        type="iteration_limit",
                        reason="max_iterations",
                        message=f"no answer after {state.max_iterations} iterations",
                    )
                )
            )
        return out

    @staticmethod
    def _read_the_definition(
        state: AgentState, answer: str, iteration: int, read: tuple[str, int] | str | None = None
    ) -> StepDecided | None:
        """After a refused answer, the verify step's follow-up: the named definition's lines when
        the quote was outside them (`read`), else find_definition of the name the question
        (else the answer) is about, unless it was looked up already."""
        if isinstance(read, str) and FIND_DEFINITION in state.tool_names and state.pending is None:
            if not is_repeat(state.history, FIND_DEFINITION, {"name": read}):
                return StepDecided(
                    iteration=iteration, thought=f"Read the definition of {read}.", action=FIND_DEFINITION,
                    args={"name": read}, auto=True,
                )
            read = None
        if isinstance(read, tuple) and READ_FILE in state.tool_names and state.pending is None:
            args = {"path": read[0], "start_line": read[1]}
            if not is_repeat(state.history, READ_FILE, args):
                return StepDecided(
                    iteration=iteration, thought=f"Read {read[0]} from line {read[1]}.", action=READ_FILE, args=args,
                    auto=True,
                )
        if FIND_DEFINITION not in state.tool_names:
            return None
        done = [str(h.args.get("name", "")) for h in state.history if h.action == FIND_DEFINITION]
        if state.pending is not None:
            return None
        name = lookup_name(question_of(state.goal), answer, done)
        if name is None:
            return None
        return StepDecided(
            iteration=iteration,
            thought=f"The answer was not confirmed; read the definition of {name}.",
            action=FIND_DEFINITION,
            args={"name": name},
            auto=state.lookups,
        )

    def evolve(self, state: AgentState, event: Event) -> AgentState:
        state = self._evolve(state, event)
        if len(state.history) > HISTORY_KEPT:
            extra = len(state.history) - HISTORY_KEPT
            state = state.model_copy(
                update={"history": state.history[extra:], "steps_dropped": state.steps_dropped + extra}
            )
        return state

    def _evolve(self, state: AgentState, event: Event) -> AgentState:
        up: dict[str, Any] = {"last_at": event.timestamp}
        if isinstance(event, (StepDecided, StepRejected)) and event.thought.strip():
            thought = " ".join(event.thought.lower().split())
            same = thought == state.last_thought
            up.update(
                last_thought=thought,
                same_thought_in_a_row=state.same_thought_in_a_row + 1 if same else 0,
            )
        if isinstance(event, AgentStarted):
            up.update(
                status="running",
                goal=event.goal,
                root=event.root,
                tools=event.tools,
                max_iterations=event.max_iterations,
                model=event.model,
                params=event.params,
                budget=event.budget,
                grounded=event.grounded,
                lookups=event.lookups,
                patches=event.patches,
                started_at=event.timestamp,
            )
        elif isinstance(event, (LlmCompleted, LlmFailed)):
            up["llm_calls"] = state.llm_calls + 1
            if state.prompt_edit is not None and event.call_index >= state.prompt_edit.call_index:
                up["prompt_edit"] = None  # the edited call is made
            if isinstance(event, LlmCompleted):
                up["tokens"] = state.tokens + event.prompt_tokens + event.completion_tokens
        elif isinstance(event, StepDecided):
            up.update(
                iteration=event.iteration,
                rejected_in_a_row=0,
                pending=PendingStep(
                    iteration=event.iteration, thought=event.thought, action=event.action, args=event.args,
                    auto=event.auto,
                ),
            )
        elif isinstance(event, StepRejected):
            item = HistoryItem(
                thought=event.thought, action=event.action, args=event.args, observation=event.observation
            )
            up.update(
                iteration=event.iteration,
                rejected_in_a_row=state.rejected_in_a_row + 1,
                history=[*state.history, item],
            )
        elif isinstance(event, ToolCalled):
            up["tool_calls"] = state.tool_calls + 1
        elif isinstance(event, ToolReturned) and state.pending is not None:
            p = state.pending
            item = HistoryItem(
                thought=p.thought,
                action=p.action,
                args=p.args,
                observation=format_observation(event.tool, event.output),
                auto=p.auto,
            )
            up.update(pending=None, history=[*state.history, item])
        elif isinstance(event, AnswerGiven):
            up.update(status="completed", iteration=event.iteration, answer=event.answer)
        elif isinstance(event, AgentFailed):
            up.update(status="failed", error=event.error)
        elif isinstance(event, AgentForked):
            if event.model is not None:
                up["model"] = event.model
            if event.params is not None:
                up["params"] = event.params
        elif isinstance(event, PromptEdited):
            up["prompt_edit"] = PromptEdit(call_index=event.call_index, messages=event.edited)
        return state.model_copy(update=up)

