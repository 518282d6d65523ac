"""The relay (seed 004) as the runtime sees it: `RelayRun`, runs of kind "relay".

A relay run is `run:ID` plus the scheduler's stream `relay:ID` (its lead, the single source
of truth), the builder's `relay:ID:builder` and the verifier's `relay:ID:verifier` (their
recorded model calls and checks), and `relay:ID:orchestrator` when the roadmap came from the
model. The runtime gets from here how to fold them (`chorus state`), replay a run, describe
its events, and the `chorus relay` verb; `Client().submit(goal, agent="relay",
workspace=DIR)` starts one.
"""

from __future__ import annotations

import argparse
import threading
from typing import Any, ClassVar

from actors.relay import cli
from actors.relay.progress import describe
from actors.relay.recording import scheduler_stream
from actors.relay.replay import replay_relay
from actors.relay.scheduler import SchedulerBehaviour
from actors.relay.session import KIND, serve_relay, start_relay
from actors.runtime.behaviour import Behaviour
from actors.runtime.client import Client, RunHandle
from actors.runtime.registry import Registry
from actors.runtime.replay.report import ReplayReport
from actors.runtime.runkind import RunKind
from events.base import Event
from events.store import Recorded


@Registry.register_run_kind
class RelayRun(RunKind):
    name = KIND
    summary = "a builder/verifier relay over a roadmap, with retries and escalation (seed 004)"
    lead = "scheduler"
    noun = "a relay"
    lead_label = "schedulers"
    tallies: ClassVar[dict[str, str]] = {
        "BatonPassed": "builder turns", "TurnVerified": "verifications", "CheckpointStored": "checkpoints",
        "EscalationRaised": "escalations", "LlmCompleted": "LLM calls", "ToolReturned": "checks",
    }  # fmt: skip
    error_types = frozenset({"EscalationRaised", "RelayStopped"})

    def submit(
        self,
        client: Client,
        goal: str,
        *,
        run_id: str,
        budget: Any = None,
        **options: Any,
    ) -> RunHandle:
        """Options: `workspace` (a folder, required), `roadmap` (a YAML or markdown file),
        `max_retries`, `llm_params`, `ray`. The roadmap is planned here (the Orchestrator's
        call when there is no file); the turns run on a thread of this process, or with
        `ray=True` on a RelayActor (actors.relay.actor)."""
        workspace = options.pop("workspace", None)
        if workspace is None:
            raise ValueError("a relay needs workspace=DIR")
        on_ray = bool(options.pop("ray", False))
        unknown = set(options) - {"roadmap", "max_retries", "llm_params"}
        if unknown:
            raise ValueError(f"unknown relay options: {', '.join(sorted(unknown))}")
        start_relay(client, goal, run_id=run_id, workspace=workspace, budget=budget, **options)
        if on_ray:
            from actors.relay.actor import RelayActor

            client.ensure_ray()
            args = (client.ensure_llm(), run_id, client.llm)
            return client.spawn(run_id, RelayActor, f"relay:{run_id}", args, ())
        threading.Thread(target=serve_relay, args=(client, run_id), name=f"relay-{run_id}", daemon=True).start()
        return RunHandle(client, run_id)

    def behaviour(self, stream_id: str, first: Event) -> Behaviour[Any] | None:
        return SchedulerBehaviour() if stream_id == scheduler_stream(first.run_id or "") else None

    def lead_events(self, records: list[Recorded], run_id: str) -> list[Event]:
        stream = scheduler_stream(run_id)
        events = sorted(
            (r.event for r in records if r.event.stream_id == stream),
            key=lambda e: e.version,
        )
        if not events:
            raise ValueError(f"relay {run_id} has no roadmap yet")
        return events

    def replay(self, records: list[Recorded], run_id: str) -> ReplayReport:
        return replay_relay(records, run_id)

    def describe(self, event: Event, brief: bool = False) -> str | None:
        return describe(event, brief=brief)

    def add_commands(self, subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
        cli.add_parsers(subparsers)
