"""What the runtime needs to know of a workload's runs: a `RunKind`, one per kind of run.

A run names its kind in `RunSubmitted.kind` ("react", "researcher", "task", ...). The
runtime asks the kind, never the name, for everything that differs between workloads:

- how to start a run (`submit`: record it and spawn its lead actor), fork one (`fork`) and
  serve again one whose actors died (`resume`);
- which behaviour owns which of its streams (`behaviour`), for `chorus state`, snapshots
  and replay;
- how to re-execute it from its log (`replay`), which stream leads it (`lead_events`,
  what `chorus diff` compares) and what else two of its runs differ in (`diff_lines`);
- how its events read as progress lines (`describe`) and its answer as text (`present`);
- its verbs on the `chorus` command (`add_commands`) and its routes on the HTTP API (`api_routers`: actors.api.app mounts them, naming no workload);
- what the HTTP API may take from a request and show below admin: the options that name a
  place on the server (`path_options`, `bundled`), the options only the server's operator
  sets (`server_options`), the commands only an admin may send (`admin_options`), and what
  of its records only an admin reads (`admin_only`).

A workload registers its kind with `Registry.register_run_kind` in the module its
`chorus.plugins` entry point names; nothing in the runtime changes for a new workload.
"""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from actors.runtime.behaviour import Behaviour
from events.base import Event

if TYPE_CHECKING:
    from actors.runtime.client import Client, RunHandle
    from actors.runtime.replay.report import ReplayReport
    from events.store import Recorded


class RunKind:
    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    default: ClassVar[bool] = False  # the kind `Client.submit` runs when none is named
    # What `chorus diff` counts for each side: event type -> what to call them.
    tallies: ClassVar[dict[str, str]] = {"LlmCompleted": "LLM calls", "ToolReturned": "tool calls"}
    lead: ClassVar[str] = "actor"  # what leads its runs ("agent", "workflow"): diff compares like with like
    noun: ClassVar[str] = "an actor"  # "run X is an agent run"
    lead_label: ClassVar[str] = "lead actors"  # "the lead agents share their first N events"
    error_types: ClassVar[frozenset[str]] = frozenset()  # events a timeline marks as errors
    # False for runs that wait for their user between steps (a simulation session): the
    # CLI prints the id of one it submitted or forked instead of following it to an end.
    live: ClassVar[bool] = True
    # What `fork RUN --at N` counts, for the CLI's words: a global log position unless the
    # kind's `fork` says otherwise (a relay: its builder turns).
    fork_unit: ClassVar[str] = "position"

    # -- what the HTTP API may take and show (actors.api.places, actors.api.visibility) ---------
    # Options (and "goal") that name a place on the server, by the kind of place: "packs" (a
    # content file), "workspace" (the run's working folder) or "in workspaces" (another file
    # or folder it reads). Over HTTP they are taken only inside the folders the server's
    # configuration allows for that place (plus `bundled`); a "workspace" option a request
    # leaves out is a fresh folder of its own per run.
    path_options: ClassVar[dict[str, str]] = {}
    # Folders of the package itself that a place includes (the simulation's bundled packs).
    bundled: ClassVar[dict[str, tuple[Path, ...]]] = {}
    # Options that make the server run a command outside any sandbox (or that only its
    # operator may choose): never taken from a request; the server's configuration may set them.
    server_options: ClassVar[frozenset[str]] = frozenset()
    # Options that name a command the run executes inside the sandbox (actors.tools.sandbox),
    # such as the relay's domain probes: over HTTP only an admin token may send them (operate
    # never chooses a command); the server's configuration may set them too.
    admin_options: ClassVar[frozenset[str]] = frozenset()
    # Options whose values may name code by import path (`pkg.mod:name`, a tool of one's
    # own): importing runs the module's top level, so over HTTP only an admin may name a
    # path; below admin they take registered names only.
    import_options: ClassVar[frozenset[str]] = frozenset()

    # -- running ---------------------------------------------------------------------------------

    def submit(self, client: Client, goal: str, *, run_id: str, budget: Any, **options: Any) -> RunHandle:
        """Record the run (`client.begin_run`) and spawn its lead actor; return at once.
        ValueError for bad options, before anything is written."""
        raise NotImplementedError

    def fork(
        self, client: Client, run_id: str, at: int, *, model: str | None = None, llm_params: dict[str, Any] | None = None
    ) -> RunHandle:
        raise ValueError(f"runs of kind {self.name!r} cannot be forked")

    def resume(self, client: Client, run_id: str, **options: Any) -> RunHandle:
        """Serve again a run whose actors died: start its lead anew from the log (what it
        recorded is not done again; keyed commands append nothing twice). ValueError where
        the kind cannot, or the run's lead never started (nothing to go on from)."""
        raise ValueError(f"runs of kind {self.name!r} cannot be resumed")

    # -- reading its log -------------------------------------------------------------------------

    def behaviour(self, stream_id: str, first: Event) -> Behaviour[Any] | None:
        """The behaviour that folds `stream_id` (whose first event is `first`), or None for a
        stream of this kind's runs that no behaviour owns (a tool's own calls, say)."""
        return None

    def lead_events(self, records: list[Recorded], run_id: str) -> list[Event]:
        """The events of the run's lead stream, in version order (what `chorus diff` compares).
        ValueError if the run has none."""
        raise ValueError(f"run {run_id} has no lead stream")

    def diff_lines(
        self,
        run_a: str,
        records_a: list[Recorded],
        run_b: str,
        records_b: list[Recorded],
    ) -> list[str]:
        """Lines `chorus diff` prints after comparing two runs of this kind event by event,
        for what the kind keeps beyond its lead stream (a relay: its branches' code). None
        by default."""
        return []

    def replay(self, records: list[Recorded], run_id: str) -> ReplayReport:
        """Re-execute the run against its own recording (see `actors.runtime.replay`)."""
        raise NotImplementedError

    def admin_only(self, stream_id: str, what: str) -> tuple[str, ...]:
        """What of a record of `stream_id` only an admin may read: dotted paths into an
        event's data (`what` is its type name) or into the stream's folded state (`what` is
        "state"); ("*",) for all of it. Nothing by default. The HTTP API redacts these for
        every principal below admin, on every route that carries them."""
        return ()

    def describe(self, event: Event, brief: bool = False) -> str | None:
        """A progress line for an event this kind knows, '' to hide it, None if not this kind's."""
        return None

    def present(self, answer: str) -> str:
        """A finished run's answer as the user reads it."""
        return answer

    # -- the front door -------------------------------------------------------------------------

    def add_commands(self, subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
        """Add this kind's verbs to the `chorus` command (each sets `func`)."""

    def api_routers(self) -> list[tuple[str, Any]]:
        """What this kind adds to the HTTP API: (prefix, FastAPI `APIRouter`) pairs that
        actors.api.app mounts under its `/v1` (prefix "" for routes at the top, "/sessions"
        for the simulation's). A workload's router lives in its own folder (`api.py`) and
        uses the API's helpers (actors.api: auth scopes, errors, services, visibility).
        None by default."""
        return []


FUNCTION_KIND = "function"  # the kind of an @agent function's runs (actors.runtime.function_agent)


def kind_of_submission(kind: Any, agent: Any, *, is_function: Callable[[Any], bool]) -> tuple[str | None, Any]:
    """What `Client.submit(kind=..., agent=...)` runs: (the kind's name, None for the
    default; the agent function or None). `is_function` tells an agent function (or its
    import path) from a kind's name. ValueError, one line, for both or for a kind that is
    not a name; a kind's name given as `agent` is deprecated (a DeprecationWarning)."""
    if kind is not None and agent is not None:
        raise ValueError(f"give kind= (the kind of run) or agent= (an agent function), not both: kind={kind!r}, agent={agent!r}")
    if kind is not None and not isinstance(kind, str):
        raise ValueError(f"kind= names a kind of run, not {kind!r}: pass an agent function as agent=")
    if agent is None:
        return kind or None, None
    if is_function(agent):
        return FUNCTION_KIND, agent
    if isinstance(agent, str) and agent:
        warnings.warn(
            f"Client.submit(agent={agent!r}) names a kind of run: write kind={agent!r} "
            "(agent= is for agent functions; a kind by agent= goes in 0.2.0)",
            DeprecationWarning,
            stacklevel=3,
        )
        return agent, None
    raise ValueError(f"agent= takes an @agent function or its import path (pkg.mod:name), not {agent!r}")
