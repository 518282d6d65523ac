"""The relay (seed 004) as the runtime sees it: `RelayRun`, runs of kind "relay".

A relay run is `run:ID` plus the scheduler's stream `relay:ID` (its lead, the single source
of truth), the builder's `relay:ID:builder` and the verifier's `relay:ID:verifier` (their
recorded model calls and checks), and `relay:ID:orchestrator` when the roadmap came from the
model. The runtime gets from here how to fold them (`chorus state`), replay a run, fork it
at a builder turn (`chorus fork RUN --at TURN`, actors.relay.fork), set two branches' code
side by side (`chorus diff`), describe its events, resume one whose process died
(`chorus resume RUN`), and the `chorus relay`, `chorus escalations` and `chorus resolve`
verbs; `Client().submit(goal, kind="relay", workspace=DIR)` starts one.

Run params (what `submit` takes and RunSubmitted records): `workspace`, `roadmap`,
`max_retries`, `llm_params`, `resubmit`, and `probes`: the domain probes, `{name: argv}`,
each a command the Verifier runs in its sandbox on every turn (exit 0 passes). `resubmit`
runs on the server outside the sandbox: it is the server's configuration, never a
request's (`server_options`: the HTTP API refuses it as a field). A probe is a command too,
but one that runs sandboxed like the tests: over HTTP only an admin token may send
`probes` (`admin_options`); the server's configuration may set them for every run.
"""

from __future__ import annotations

import argparse
import threading
from typing import Any, ClassVar

import actors.relay.checkpoints  # noqa: F401  (registers the relay's view: chorus projections, chorus relay)
import actors.relay.events  # noqa: F401  (registers the relay's event types: replay, chorus log, the audit view)
from actors.relay import cli
from actors.relay.fork import fork_relay
from actors.relay.progress import describe
from actors.relay.recording import scheduler_stream
from actors.relay.replay import replay_relay
from actors.relay.scheduler import SchedulerBehaviour
from actors.relay.session import KIND, serve_relay, start_relay
from actors.relay.workspace import changes_between, diff_text, fold_workspace
from actors.runtime.behaviour import Behaviour
from actors.runtime.client import Client, RunHandle
from actors.runtime.registry import Registry
from actors.runtime.replay.report import ReplayReport
from actors.runtime.runkind import FrontDoor, HttpPolicy, Reading, RunKind, Running, Wording
from events.base import Event
from events.store import Recorded


class RelayRunning(Running):
    """How a relay runs: on a thread of this process, or on a RelayActor (`ray=True`)."""

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
        `max_retries`, `llm_params`, `resubmit` (a command as an argv list, or a callable
        `hook(checkpoint, workspace)`, run after each checkpoint), `probes` (`{name: argv}`,
        the Verifier's domain probes), `ray`. The roadmap is
        planned here (the Orchestrator's call when there is no file); the turns run on a
        thread of this process, or with `ray=True` on a RelayActor (actors.relay.actor), the
        Scheduler, which hands each turn to a Builder and a Verifier actor."""
        workspace = options.pop("workspace", None)
        if workspace is None:
            raise ValueError("a relay needs workspace=DIR")
        on_ray = bool(options.pop("ray", False))
        unknown = set(options) - {"roadmap", "max_retries", "llm_params", "resubmit", "probes"}
        if unknown:
            raise ValueError(f"unknown relay options: {', '.join(sorted(unknown))}")
        start_relay(client, goal, run_id=run_id, workspace=workspace, budget=budget, **options)
        return self._serve(client, run_id, on_ray)

    def resume(self, client: Client, run_id: str, *, ray: bool = False) -> RunHandle:
        """Serve a relay whose process died (or was stopped) again: `serve_relay` goes on
        from its log (a turn half done is done again from its recorded effects, keys append
        nothing twice). Only one process should serve a relay at a time: resuming one
        that still runs elsewhere makes two drivers (the log stays whole, appends are
        optimistic and keyed, but a model call may be made twice)."""
        return self._serve(client, run_id, ray)

    def _serve(self, client: Client, run_id: str, on_ray: bool) -> RunHandle:
        if on_ray:
            from actors.relay.actor import RelayActor

            client.ensure_ray()
            args = (client.ensure_llm(), run_id, client.llm)
            return client.spawn(run_id, RelayActor, f"relay:{run_id}", args, ())
        threading.Thread(target=serve_relay, args=(client, run_id), name=f"relay-{run_id}", daemon=True).start()
        return RunHandle(client, run_id)

    def fork(
        self,
        client: Client,
        run_id: str,
        at: int,
        *,
        model: str | None = None,
        llm_params: dict[str, Any] | None = None,
        workspace: str | None = None,
    ) -> RunHandle:
        """`at` is a builder turn: the new relay shares the run's history up to that turn's
        verification (0: its plan alone; see actors.relay.fork), gets its own workspace
        (`workspace`, else `<original workspace>-<new id>`) and continues live on a thread
        of this process. `llm_params` are laid over the run's for the turns to come; the
        model is the configured one (CHORUS_LLM_MODEL)."""
        if model is not None and model != client.settings.llm_model:
            raise ValueError(
                "a relay fork continues with the configured model (CHORUS_LLM_MODEL); "
                "--model does not apply"
            )
        new = fork_relay(client, run_id, at, workspace=workspace, llm_params=llm_params)
        threading.Thread(
            target=serve_relay, args=(client, new), name=f"relay-{new}", daemon=True
        ).start()
        return RunHandle(client, new)


class RelayReading(Reading):
    """How a relay is read: the scheduler's stream leads; a diff adds the branches' code."""

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

    def diff_lines(
        self,
        run_a: str,
        records_a: list[Recorded],
        run_b: str,
        records_b: list[Recorded],
    ) -> list[str]:
        """The two branches' code: each run's final workspace, folded from its log, as a
        unified diff per file (`--- A/path`, `+++ B/path`)."""
        a = fold_workspace(self.lead_events(records_a, run_a))
        b = fold_workspace(self.lead_events(records_b, run_b))
        changed = changes_between(a, b)
        if not changed:
            return [f"the workspaces hold the same {len(a)} file(s)"]
        head = f"the workspaces differ in {len(changed)} of {len(set(a) | set(b))} file(s):"
        text = diff_text(a, b, before_label=run_a, after_label=run_b)
        return [head, *text.splitlines()]

    def describe(self, event: Event, brief: bool = False) -> str | None:
        return describe(event, brief=brief)


class RelayFront(FrontDoor):
    """`chorus relay`, `chorus escalations`, `chorus resolve` and the relay's routes."""

    def api_routers(self) -> list[tuple[str, Any]]:
        from actors.relay import api  # FastAPI only for the server

        return [("", api.build_router())]

    def add_commands(self, subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
        cli.add_parsers(subparsers)


@Registry.register_run_kind
class RelayRun(RunKind):
    name = KIND
    running: ClassVar[type[Running]] = RelayRunning
    reading: ClassVar[type[Reading]] = RelayReading
    front: ClassVar[type[FrontDoor]] = RelayFront
    wording = Wording(
        summary="a builder/verifier relay over a roadmap, with retries and escalation (seed 004)",
        lead="scheduler",
        noun="a relay",
        lead_label="schedulers",
        fork_unit="turn",
        tallies={
            "BatonPassed": "builder turns", "TurnVerified": "verifications", "CheckpointStored": "checkpoints",
            "EscalationRaised": "escalations", "LlmCompleted": "LLM calls", "ToolReturned": "checks",
        },  # fmt: skip
        error_types=frozenset({"EscalationRaised", "RelayStopped"}),
    )
    # Over HTTP: the workspace and roadmap only inside the folders the server allows (a
    # fresh folder per run when left out); `resubmit` runs on the server, outside the
    # sandbox, so only the server's configuration sets it; probes are commands run in the
    # sandbox, so an admin may send them (actors.api.places).
    http = HttpPolicy(
        path_options={"workspace": "workspace", "roadmap": "in workspaces"},
        server_options=frozenset({"resubmit"}),
        admin_options=frozenset({"probes"}),
    )
