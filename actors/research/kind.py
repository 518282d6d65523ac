"""Research runs (seed 000) as the runtime sees them: a run of the agent function
`actors.research.lead:research`, with its own options, progress lines and the `chorus
research` verb. Resume, fork, replay and signals are the function runs'."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, ClassVar

import actors.index.indexer
import actors.index.searcher
import actors.tools.definitions
import actors.tools.files  # noqa: F401  (registers the file tools)
from actors.agent.kind import checked_root, describe_agent, tool_specs
from actors.agent.lookups import FIND_DEFINITION, new_patches, reads_code
from actors.agent.patches import check_patches
from actors.research import cli
from actors.runtime.function_agent import FunctionReading, FunctionRun, FunctionRunning, describe_function
from actors.runtime.function_tool import tool_ref
from actors.runtime.progress import short
from actors.runtime.registry import Registry
from actors.runtime.runkind import FrontDoor, HttpPolicy, Reading, Running, Wording
from events.base import Event
from events.runs import Budget

LEAD = "actors.research.lead:research"
DEFAULT_TOOLS = ("repository_search", "find_definition", "read_file", "search_files")
NO_REPO_TOOLS = ("search_files", "find_definition", "read_file")  # without a repository there is no index


class ResearchRunning(FunctionRunning):
    """A research run starts the lead function with the research options; the rest
    (resume, fork, signals) is the function runs'."""

    def submit(  # type: ignore[override]
        self,
        client: Any,
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
    ) -> Any:
        root_path = checked_root(root, max_iterations, patches)
        names = [tool_ref(t) for t in (*(tools if tools is not None else DEFAULT_TOOLS if repo else NO_REPO_TOOLS), *(add_tools or ()))]
        specs = tool_specs(names)  # RegistryError for an unknown tool, before anything is written
        grounded = reads_code(specs) if grounded is None else grounded
        lookups = grounded and FIND_DEFINITION in [s.name for s in specs]
        options = {
            "repo_url": repo, "root": str(root_path), "tools": [s.model_dump(mode="json") for s in specs],
            "max_iterations": max_iterations, "budget": budget.model_dump(mode="json"), "grounded": grounded,
            "lookups": lookups, "states_answer": grounded,
            "patches": new_patches(grounded, lookups) if patches is None else check_patches(patches),
        }  # fmt: skip
        return self.start(client, goal, run_id=run_id, budget=budget, path=LEAD, root=str(root_path), model=None,
                          llm_params=llm_params, options=options)  # fmt: skip


class ResearchReading(FunctionReading):
    """Research events read as research progress; replay is the function runs'."""

    def describe(self, event: Event, brief: bool = False) -> str | None:
        t = event.type_name
        d: Any = event
        if t == "ToolReturned" and d.tool == "index_repository" and d.ok:
            return ""  # IndexingCompleted says it in words
        if t == "ResearchRequested":
            return f"research: {short(d.objective)}" + (f" (repository {d.repo_url})" if d.repo_url else "")
        if t == "IndexingStarted":
            return f"indexing {d.repo_url} ..."
        if t == "IndexingCompleted":
            return f"indexed: {d.summary or f'{d.files} files, {d.chunks} chunks'}"
        if t == "PlanMade":
            return "plan:\n" + "\n".join(f"  {i}. {short(s)}" for i, s in enumerate(d.steps, 1))
        if t == "ReportWritten":
            return f"report written ({len(d.final_report.splitlines())} lines)"
        if t == "ResearchFailed":
            return f"! research failed: {d.error.line()}"
        if t in ("FunctionStarted", "FunctionCompleted", "ResearchStarted"):
            return ""  # ResearchRequested and ReportWritten say it
        if t == "FunctionFailed":
            return describe_function(event, brief) if d.error.type in ("agent_error", "non_determinism") else ""
        found = describe_agent(event, brief)
        return found if found is not None else describe_function(event, brief)


class ResearchCommands(FrontDoor):
    """`chorus research`."""

    def add_commands(self, subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
        cli.add_parsers(subparsers)


@Registry.register_run_kind
class ResearchRun(FunctionRun):
    name = cli.RESEARCHER
    running: ClassVar[type[Running]] = ResearchRunning
    reading: ClassVar[type[Reading]] = ResearchReading
    front: ClassVar[type[FrontDoor]] = ResearchCommands
    wording = Wording(
        summary="index a repository, plan, research with the ReAct loop, write a report (seed 000)",
        lead="agent",
        noun="a research run",
        lead_label="agent functions",
        tallies={"LlmCompleted": "LLM calls", "ToolReturned": "tool calls", "StepRejected": "rejected steps"},
        error_types=frozenset({"FunctionFailed", "ResearchFailed", "AgentFailed", "StepRejected"}),
    )
    http = HttpPolicy(path_options={"root": "workspace"}, import_options=frozenset({"tools", "add_tools"}))
