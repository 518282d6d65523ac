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

from events.base import Event
from events.errors import ErrorInfo
from events.registry import event_type


@event_type("ResearchRequested")
class ResearchRequested(Event):
    """A person asked for research (status PENDING)."""

    objective: str
    repo_url: str | None = None  # the repository to analyse, if any


@event_type("IndexingStarted")
class IndexingStarted(Event):
    """The repository is being cloned, chunked and embedded (status INDEXING)."""

    repo_url: str


@event_type("IndexingCompleted")
class IndexingCompleted(Event):
    """The index is ready; the agent starts reasoning (status RUNNING)."""

    files: int  # files indexed
    chunks: int  # chunks embedded


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
