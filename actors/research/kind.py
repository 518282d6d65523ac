"""Research runs (seed 000) as the runtime sees them: an agent run led by the `Researcher`,
with its own progress lines and the `chorus research` verb."""

from __future__ import annotations

import argparse
from typing import Any

import actors.index.indexer  # noqa: F401  (registers index_repository)
import actors.index.searcher  # noqa: F401  (registers repository_search)
import actors.research.researcher  # noqa: F401  (registers the researcher agent)
from actors.agent.kind import AgentRunKind
from actors.research import cli
from actors.runtime.progress import short
from actors.runtime.registry import Registry
from events.base import Event


@Registry.register_run_kind
class ResearchRun(AgentRunKind):
    name = cli.RESEARCHER
    summary = "index a repository, plan, research with the ReAct loop, write a report (seed 000)"

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
        return super().describe(event, brief)

    def add_commands(self, subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
        cli.add_parsers(subparsers)
