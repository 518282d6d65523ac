"""A research run's lifecycle (seed 000): requested, the repository indexed, the agent
running, the report written, or the run failed.

These are the status changes of seed 000's `ResearchHistory` row
(PENDING → INDEXING → RUNNING → COMPLETED | FAILED); the Thought/Action/Observation
steps in between are the agent's own StepDecided / ToolReturned / StepRejected events,
which carry the same run_id. (The researcher, a later workload, is to append these to
`research:{run_id}`; the research history view keys on the envelope's run_id, not on
the stream.)
"""

from __future__ import annotations

from typing import Any

from actors.agent.events import ToolSpec, lookups_as_patches, rules_as_patches
from events.base import Event
from events.errors import ErrorInfo
from events.registry import event_type, upcaster
from events.runs import Budget, explicit_budget


# v2: Budget() became finite (events/runs.py); v3: patches for the rule revision; v4: definition_checks for lookups
@event_type("ResearchRequested", version=4)
class ResearchRequested(Event):
    """A person asked for research (status PENDING)."""

    objective: str
    repo_url: str | None = None  # the repository to analyse, if any
    # How the researcher runs (defaults keep events written before these fields readable).
    root: str = ""  # folder the file tools read when there is no repository
    tools: list[ToolSpec] = []  # the agent's tools (the indexer is not among them)
    max_iterations: int = 10
    model: str = ""
    params: dict[str, Any] = {}
    budget: Budget = Budget()
    grounded: bool = False  # the loop's answers quote their line (False: recorded before that existed)
    lookups: bool = False  # the loop reads the definitions the question names itself (AgentStarted.lookups)
    # The report opens with the loop's checked answer, or says plainly that none was found
    # (False: recorded before that existed; such a report is the model's text alone).
    states_answer: bool = False
    # The named patches its loop starts with (AgentStarted.patches; none for runs recorded
    # before a research loop took them).
    patches: list[str] = []


@upcaster("ResearchRequested", from_version=1)
def _researchrequested_v1(payload: dict[str, Any]) -> dict[str, Any]:
    return explicit_budget(payload)  # written when Budget() was unlimited: it stays so


@upcaster("ResearchRequested", from_version=2)
def _researchrequested_v2(payload: dict[str, Any]) -> dict[str, Any]:
    return rules_as_patches(payload)  # the loop's rule revision, as the patches it meant


@upcaster("ResearchRequested", from_version=3)
def _researchrequested_v3(payload: dict[str, Any]) -> dict[str, Any]:
    return lookups_as_patches(payload)  # the loop's checks that came with lookups, as their patch


@event_type("IndexingStarted")
class IndexingStarted(Event):
    """The repository is being cloned, chunked and embedded (status INDEXING)."""

    repo_url: str


@event_type("IndexingCompleted")
class IndexingCompleted(Event):
    """The index is ready; the agent starts reasoning (status RUNNING)."""

    files: int  # files indexed
    chunks: int  # chunks embedded
    root: str = ""  # the folder indexed (a clone, for a URL)
    collection: str = ""  # its Qdrant collection
    files_unchanged: int = 0  # skipped on re-indexing: same content hash
    skipped: int = 0  # binary or huge files left out
    summary: str = ""


@event_type("PlanMade")
class PlanMade(Event):
    """The objective decomposed into steps (seed 000 §2.2 step 1), before the loop starts."""

    steps: list[str]


@event_type("ResearchStarted")
class ResearchStarted(Event):
    """The agent starts reasoning with nothing to index (status RUNNING): a run without
    a repository goes PENDING → RUNNING."""

    lead_stream: str  # the researcher agent's stream


@event_type("ReportWritten")
class ReportWritten(Event):
    """The final synthesized report (status COMPLETED)."""

    final_report: str  # markdown


@event_type("ResearchFailed")
class ResearchFailed(Event):
    """The run ended without a report (status FAILED): indexing, the agent or a budget failed."""

    error: ErrorInfo
