"""Agent runs as the runtime sees them: one `AgentRunKind` per registered agent behaviour
(the ReAct agent here; the researcher and the code-question orchestrator reuse it).

An agent run is a `run:ID` lifecycle plus the lead agent's stream `agent:ID`, served by
`AgentActor` on Ray. Replay re-drives the agent against its recording (actors/agent/replay.py);
a fork copies the lead stream's prefix into a new run and continues live from there.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

import actors.tools.definitions  # noqa: F401  (registers find_definition)
import actors.tools.files  # noqa: F401  (registers the file tools the ReAct agent uses)
from actors.agent.actor import AgentActor, agent_stream
from actors.agent.events import AgentForked, ToolSpec  # and registers the agent's event types with its plugin
from actors.agent.policy import unwrap_answer
from actors.agent.patches import check_patches
from actors.agent.react import ReactAgent
from actors.agent.replay import agent_streams, replay_agent
from actors.runtime.behaviour import Behaviour
from actors.runtime.cli_dialect import add_root
from actors.runtime.client import DEFAULT_LLM_PARAMS, Client, RunHandle, new_run_id
from actors.runtime.console import follow_run
from actors.runtime.function_tool import tool_ref
from actors.runtime.progress import call_text, short
from actors.runtime.registry import Registry
from actors.runtime.replay import ReplayReport, run_records
from actors.runtime.runkind import FrontDoor, HttpPolicy, Reading, RunKind, Running, Wording
from actors.runtime.settings import Settings
from events.base import Event
from events.runs import DEFAULT_MAX_LLM_CALLS, Budget
from events.store import Recorded

FINISHED = ("AnswerGiven", "AgentFailed")


class AgentRunning(Running):
    """How an agent run runs: its lead agent served by `AgentActor` on Ray."""

    kind: AgentRunKind

    def submit(
        self,
        client: Client,
        goal: str,
        *,
        run_id: str,
        budget: Budget,
        root: str | Path = ".",
        tools: list[Any] | tuple[Any, ...] | None = None,
        add_tools: list[Any] | tuple[Any, ...] | None = None,
        repo: str | None = None,
        max_iterations: int = 10,
        llm_params: dict[str, Any] | None = None,
        grounded: bool | None = None,
        patches: list[str] | None = None,
    ) -> RunHandle:
        root_path = checked_root(root, max_iterations, patches)
        agent_cls = self.kind.agent_class()
        if tools is None:
            tools = agent_cls.tools_for(repo) if hasattr(agent_cls, "tools_for") else agent_cls.default_tools
        # Names, import paths, or @tool functions and Tool classes (recorded as their paths).
        tools = [tool_ref(t) for t in (*tools, *(add_tools or ()))]
        specs = tool_specs(tools)  # RegistryError for an unknown tool, before anything is written
        settings = client.ensure_llm()
        client.ensure_ray()
        params = dict(DEFAULT_LLM_PARAMS if llm_params is None else llm_params)
        client.begin_run(
            run_id,
            goal=goal,
            kind=self.kind.name,
            params={
                "root": str(root_path),
                "repo": repo,
                "tools": list(tools),
                "max_iterations": max_iterations,
                "llm_params": params,
            },
            budget=budget,
        )
        extra: dict[str, Any] = {"repo": repo} if repo else {}
        if grounded is not None:
            extra["grounded"] = grounded
        if patches is not None:  # a grounded run's named patches (default: every current one)
            extra["patches"] = patches
        start = agent_cls.make_start(
            goal=goal,
            root=str(root_path),
            tools=specs,
            max_iterations=max_iterations,
            model=settings.llm_model,
            params=params,
            budget=budget,
            **extra,
        )
        return self._spawn(client, run_id, settings, start)

    def resume(self, client: Client, run_id: str, **options: Any) -> RunHandle:
        """The lead agent served again: its start command rebuilt from the `AgentStarted` it
        recorded (the key is applied already, so it appends nothing) and the agent goes on
        from its log."""
        if options:
            raise ValueError(f"resuming a {self.kind.name} run takes no options, not {', '.join(sorted(options))}")
        records = run_records(client.store, run_id)
        lead = agent_streams(records).get(agent_stream(run_id))
        if not lead:
            raise ValueError(f"run {run_id}'s agent never started: there is nothing to resume (submit it again)")
        behaviour = self.kind.agent_class()()
        start = behaviour.start_command(lead[0], key=lead[0].command_id or "start")
        return self._spawn(client, run_id, client.ensure_llm(), start)

    def _spawn(self, client: Client, run_id: str, settings: Settings, start: Any) -> RunHandle:
        return client.spawn(run_id, AgentActor, agent_stream(run_id), (settings, run_id, self.kind.name, client.llm), (start,))

    def fork(
        self, client: Client, run_id: str, at: int, *, model: str | None = None, llm_params: dict[str, Any] | None = None
    ) -> RunHandle:
        """The lead agent's events up to position `at` (whole commands), copied into a new
        run's agent stream, then `AgentForked`, then the agent continues live."""
        records = run_records(client.store, run_id)
        position = {rec.event.event_id: rec.position for rec in records}
        agents = agent_streams(records)
        if not agents:
            raise ValueError(f"run {run_id} has no agent to fork")
        lead = next(iter(agents.values()))
        first, last = position[lead[0].event_id], position[lead[-1].event_id]
        if at < first or at > records[-1].position:
            raise ValueError(f"position {at} is outside run {run_id} (its agent spans {first}..{last})")
        prefix = [e for e in lead if position[e.event_id] <= at]
        # Keep whole commands: a command's events were appended together.
        while len(prefix) < len(lead) and prefix[-1].command_id == lead[len(prefix)].command_id:
            prefix.pop()
        if prefix[-1].type_name in FINISHED:
            raise ValueError(
                f"the agent of run {run_id} had finished by position {at}; fork at an earlier position"
            )
        original = client.run_state(run_id)
        settings = client.ensure_llm()
        client.ensure_ray()
        new_id = new_run_id()
        origin = f"{run_id}@{at}"
        client.begin_run(
            new_id,
            goal=original.goal,
            kind=original.kind,
            params={**original.params, "forked_from": origin, "model": model, "llm_params": llm_params},
            budget=original.budget,
            forked_from=origin,
        )
        copies = [
            type(e).model_validate(
                {
                    **e.payload(),
                    "timestamp": e.timestamp,
                    "command_id": e.command_id,
                    "causation_id": e.causation_id,
                    "run_id": new_id,
                }
            )
            for e in prefix
        ]
        stream = agent_stream(new_id)
        client.store.append(stream, copies, 0)
        forked = AgentForked(origin_run=run_id, origin_position=at, model=model, params=llm_params)
        client.store.append(stream, [forked.stamp(run_id=new_id, command_id="fork")], len(copies))
        start = self.kind.agent_class()().start_command(prefix[0])
        return self._spawn(client, new_id, settings, start)


class AgentReading(Reading):
    """How an agent run is read: the lead agent's stream, re-driven on replay."""

    kind: AgentRunKind

    def behaviour(self, stream_id: str, first: Event) -> Behaviour[Any] | None:
        if stream_id == agent_stream(first.run_id) or first.type_name == "AgentStarted":
            return self.kind.agent_class()()
        return None

    def lead_events(self, records: list[Recorded], run_id: str) -> list[Event]:
        agents = agent_streams(records)
        if not agents:
            raise ValueError(f"run {run_id} has no agent events")
        return next(iter(agents.values()))

    def replay(self, records: list[Recorded], run_id: str) -> ReplayReport:
        return replay_agent(self.kind.agent_class()(), records, run_id)

    def describe(self, event: Event, brief: bool = False) -> str | None:
        return describe_agent(event, brief)

    def present(self, answer: str) -> str:
        return unwrap_answer(answer)


class AgentRunKind(RunKind):
    """Runs led by the agent behaviour registered under `name`."""

    running: ClassVar[type[Running]] = AgentRunning
    reading: ClassVar[type[Reading]] = AgentReading
    wording = Wording(
        lead="agent",
        noun="an agent",
        lead_label="lead agents",
        tallies={"LlmCompleted": "LLM calls", "ToolReturned": "tool calls", "StepRejected": "rejected steps"},
        error_types=frozenset({"AgentFailed", "StepRejected"}),
    )
    # Over HTTP the folder the agent reads lies inside one the server allows (a fresh
    # folder per run when left out; never the server's working directory).
    http = HttpPolicy(path_options={"root": "workspace"}, import_options=frozenset({"tools", "add_tools"}))

    def agent_class(self) -> Any:
        return Registry.agent_class(self.name)


def checked_root(root: str | Path, max_iterations: int, patches: list[str] | None = None) -> Path:
    """The run's folder, resolved, after the checks every agent-led run makes of its options
    (ValueError, before anything is written)."""
    if max_iterations < 1:
        raise ValueError(f"max_iterations must be at least 1, not {max_iterations}")
    if patches is not None:
        if isinstance(patches, str):
            raise ValueError(f"patches must be a list of patch names, not the string {patches!r}")
        check_patches(patches)
    root_path = Path(root).expanduser().resolve()
    if not root_path.is_dir():
        raise ValueError(f"root folder {root} does not exist")
    return root_path


def tool_spec(name: str) -> ToolSpec:
    """The spec of the tool registered as `name`, or at import path `name` (then named as the
    tool names itself: `examples.tools.word_count:word_count` is `word_count` to the model)."""
    cls = Registry.tool_class(name)
    shown = name if name in Registry.names()["tools"] else cls.name
    return ToolSpec(name=shown, signature=cls.signature(), description=cls.description, topic=Registry.topic_of(name))


def tool_specs(names: list[str]) -> list[ToolSpec]:
    """The specs of a run's tools; ValueError when two share a name the model calls them by."""
    specs = [tool_spec(name) for name in names]
    seen: dict[str, str] = {}
    for name, spec in zip(names, specs):
        if spec.name in seen:
            raise ValueError(f"two tools are named {spec.name!r} ({seen[spec.name]} and {name}): give one another name")
        seen[spec.name] = name
    return specs


def describe_agent(e: Event, brief: bool = False) -> str | None:
    """The agent's events as progress lines; None for any other."""
    t = e.type_name
    d: Any = e
    if t == "AgentStarted":
        tools = ", ".join(s.name for s in d.tools)
        return f"agent started: tools {tools}; at most {d.max_iterations} iterations"
    if t == "StepDecided":
        return f"[{d.iteration}] {short(d.thought)}\n    → {call_text(d.action, d.args)}"
    if t == "StepRejected":
        head = f"[{d.iteration}] {short(d.thought)}\n    " if d.thought else f"[{d.iteration}] "
        return f"{head}✗ step not run ({d.reason}): {short(d.observation)}"
    if t == "AnswerGiven":
        return f"[{d.iteration}] answered" + (f": {short(d.answer)}" if brief else "")
    if t == "AgentFailed":
        return f"! {t}: {d.error.line()}"
    if t == "AgentForked":
        return f"forked from {d.origin_run}@{d.origin_position}" + (f", model {d.model}" if d.model else "")
    if t == "CompletionEdited":
        return f"LLM call {d.call_index}'s completion edited by {d.edited_by}: {short(d.edited)}"
    if t == "PromptEdited":
        changed = [m for i, m in enumerate(d.edited) if i >= len(d.original) or d.original[i] != m]
        what = f"{changed[0].get('role')}: {short(str(changed[0].get('content')))}" if changed else "messages removed"
        return f"LLM call {d.call_index}'s prompt edited by {d.edited_by}, sent live ({what})"
    return None


class ReactCommands(FrontDoor):
    """`chorus run`."""

    def add_commands(self, subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
        run = subparsers.add_parser("run", help="run a goal end to end and print the answer")
        run.add_argument("goal", help="what to do or find out, in words")
        add_root(run, "folder the agent's file tools may read (default: .)", default=".")
        run.add_argument(
            "--tools", type=_names, metavar="TOOL,...",
            help="the run's tools, replacing the defaults: registered names or import paths "
            "(package.module:function, a @tool function)",
        )  # fmt: skip
        run.add_argument(
            "--tool", action="append", default=[], metavar="TOOL",
            help="a tool added to the defaults (or to --tools); repeatable",
        )  # fmt: skip
        run.add_argument("--max-iterations", type=int, default=10, help="ReAct iterations (default 10)")
        run.add_argument("--max-llm-calls", type=int, default=DEFAULT_MAX_LLM_CALLS, help="LLM calls the run may make (default %(default)s)")
        run.add_argument("--max-tokens", type=int, help="tokens the run may use")
        run.add_argument("--max-seconds", type=float, help="wall-time budget")
        run.add_argument(
            "--grounded", action="store_true",
            help="code questions: every answer quotes a line the tools showed and passes the verify step, "
            "else it is \"Not found in the code\" (off by default: the agent answers about files in general)",
        )  # fmt: skip
        run.add_argument("--quiet", "-q", action="store_true", help="print only the answer")
        run.set_defaults(func=cmd_run)


@Registry.register_run_kind
class ReactRun(AgentRunKind):
    """`chorus run`: the ReAct agent over a folder's files."""

    name = "react"
    default = True
    wording = replace(AgentRunKind.wording, summary="the ReAct agent over a folder's files")
    front: ClassVar[type[FrontDoor]] = ReactCommands


def _names(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise argparse.ArgumentTypeError("name at least one tool")
    return names


def cmd_run(args: argparse.Namespace) -> int:
    budget = Budget(
        max_llm_calls=args.max_llm_calls, max_tokens=args.max_tokens, max_wall_seconds=args.max_seconds
    )
    with Client() as client:
        handle = client.submit(
            args.goal,
            kind=ReactRun.name,
            root=args.root,
            tools=args.tools,
            add_tools=args.tool or None,
            max_iterations=args.max_iterations,
            budget=budget,
            grounded=True if args.grounded else None,
        )
        print(f"run {handle.run_id}", flush=True)
        return follow_run(handle, args.quiet)


__all__ = ["AgentReading", "AgentRunKind", "AgentRunning", "ReactAgent", "ReactRun", "describe_agent", "tool_spec"]
