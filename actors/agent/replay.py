"""Replaying an agent run: each agent stream of the run (the lead's `agent:ID`, and any that
begins with `AgentStarted`) re-driven by its behaviour against its own recording, every LLM
completion and tool result served from the log, and compared event by event; the first
stream that diverges ends the replay.
"""

from __future__ import annotations

from typing import Any

from actors.runtime.perform import drive
from actors.runtime.replay import Divergence, ReplayReport, replay_stream
from events.base import Event
from events.store import Recorded


def replay_agent(behaviour: Any, records: list[Recorded], run_id: str) -> ReplayReport:
    """Replay every agent stream of a run with `behaviour` (the run kind's agent)."""
    report = ReplayReport(run_id)
    for stream_id, original in agent_streams(records).items():
        replayed, divergence = replay_agent_stream(behaviour, stream_id, original, run_id)
        report.add(stream_id, original, replayed)
        if divergence is not None:
            report.divergence = divergence
            break
    return report


def replay_agent_stream(
    behaviour: Any, stream_id: str, original: list[Event], run_id: str
) -> tuple[list[Event], Divergence | None]:
    """Re-drive one agent stream against its own recording (see `replay_stream`)."""
    first = original[0]

    def begin(shell: Any) -> None:
        start = behaviour.start_command(first, key=first.command_id or "start")
        shell.handle(start, causation_id=first.causation_id)

    return replay_stream(behaviour, stream_id, original, run_id, begin=begin, execute=drive)


def agent_streams(records: list[Recorded]) -> dict[str, list[Event]]:
    """The run's agent streams (the lead's `agent:RUN`, and any that begin with
    AgentStarted), events in version order."""
    streams: dict[str, list[Event]] = {}
    for rec in records:
        streams.setdefault(rec.event.stream_id, []).append(rec.event)
    return {
        sid: sorted(evs, key=lambda e: e.version)
        for sid, evs in streams.items()
        if evs and (sid.startswith("agent:") or min(evs, key=lambda e: e.version).type_name == "AgentStarted")
    }


__all__ = ["agent_streams", "replay_agent", "replay_agent_stream"]
