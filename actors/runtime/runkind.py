"""What the runtime needs to know of a workload's runs: a `RunKind`, one per kind of run.

A run names its kind in `RunSubmitted.kind` ("react", "researcher", "task", ...). The
runtime asks the kind, never the name, for everything that differs between workloads, and
a kind answers through parts, one job each:

- `running` (a `Running`): how its runs run: start one (`submit`: record it and spawn its
  lead actor), fork one (`fork`), serve again one whose actors died (`resume`), and whether
  a run goes on by itself (`live`) or waits for its user between steps;
- `reading` (a `Reading`): how its log is read and replayed: which behaviour owns which of
  its streams (`behaviour`, for `chorus state`, snapshots and replay), how to re-execute a
  run (`replay`), which stream leads it (`lead_events`, what `chorus diff` compares) and
  what else two runs differ in (`diff_lines`), how its events read as progress lines
  (`describe`), its answer as text (`present`), and what of its records only an admin
  reads (`admin_only`);
- `front` (a `FrontDoor`): what it adds to the `chorus` command (`add_commands`) and to the
  HTTP API (`api_routers`: actors.api.app mounts them, naming no workload);

and two plain records of data:

- `wording` (a `Wording`): the words the CLI and the page use for its runs;
- `http` (an `HttpPolicy`): what the HTTP API may take from a request for one of its runs.

Every part has a default, so a kind of one's own sets only what differs:

    class Shout(Running):
        def submit(self, client, goal, *, run_id, budget, **options):
            ...

    @Registry.register_run_kind
    class ShoutRun(RunKind):
        name = "shout"
        running = Shout

A part is given as its class (`running = Shout`) and made once per kind, with the kind:
a part reaches the kind's name and its other parts as `self.kind`.

A workload registers its kind with `Registry.register_run_kind` in the module its
`chorus.plugins` entry point names; nothing in the runtime changes for a new workload.
"""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from actors.runtime.behaviour import Behaviour
from events.base import Event

if TYPE_CHECKING:
    from actors.runtime.client import Client, RunHandle
    from actors.runtime.replay.report import ReplayReport
    from events.store import Recorded


@dataclass(frozen=True)
class Wording:
    """How a kind's runs are named to a person (the CLI, `chorus diff`, the page)."""

    summary: str = ""  # one line for `chorus --help` and the docs
    lead: str = "actor"  # what leads its runs ("agent", "workflow"): diff compares like with like
    noun: str = "an actor"  # "run X is an agent run"
    lead_label: str = "lead actors"  # "the lead agents share their first N events"
    # What `fork RUN --at N` counts: a global log position unless the kind's `fork` says
    # otherwise (a relay: its builder turns).
    fork_unit: str = "position"
    # What `chorus diff` counts for each side: event type -> what to call them.
    tallies: Mapping[str, str] = field(
        default_factory=lambda: {"LlmCompleted": "LLM calls", "ToolReturned": "tool calls"}
    )
    error_types: frozenset[str] = frozenset()  # events a timeline marks as errors


@dataclass(frozen=True)
class HttpPolicy:
    """What the HTTP API may take from a request for a run of this kind (actors.api.places)."""

    # Options (and "goal") that name a place on the server, by the kind of place: "packs" (a
    # content file), "workspace" (the run's working folder) or "in workspaces" (another file
    # or folder it reads). Over HTTP they are taken only inside the folders the server's
    # configuration allows for that place (plus `bundled`); a "workspace" option a request
    # leaves out is a fresh folder of its own per run.
    path_options: Mapping[str, str] = field(default_factory=dict)
    # Folders of the package itself that a place includes (the simulation's bundled packs).
    bundled: Mapping[str, tuple[Path, ...]] = field(default_factory=dict)
    # Options that make the server run a command outside any sandbox (or that only its
    # operator may choose): never taken from a request; the server's configuration may set them.
    server_options: frozenset[str] = frozenset()
    # Options that name a command the run executes inside the sandbox (actors.tools.sandbox),
    # such as the relay's domain probes: over HTTP only an admin token may send them (operate
    # never chooses a command); the server's configuration may set them too.
    admin_options: frozenset[str] = frozenset()
    # Options whose values may name code by import path (`pkg.mod:name`, a tool of one's
    # own): importing runs the module's top level, so over HTTP only an admin may name a
    # path; below admin they take registered names only.
    import_options: frozenset[str] = frozenset()


class Part:
    """A part of a RunKind: made once per kind, with it (`self.kind`)."""

    def __init__(self, kind: RunKind) -> None:
        self.kind = kind


class Running(Part):
    """How runs of a kind run."""

    # False for runs that wait for their user between steps (a simulation session): the
    # CLI prints the id of one it submitted or forked instead of following it to an end.
    live: ClassVar[bool] = True

    def submit(self, client: Client, goal: str, *, run_id: str, budget: Any, **options: Any) -> RunHandle:
        """Record the run (`client.begin_run`) and spawn its lead actor; return at once.
        ValueError for bad options, before anything is written."""
        raise NotImplementedError(f"runs of kind {self.kind.name!r} cannot be submitted")

    def fork(
        self, client: Client, run_id: str, at: int, *, model: str | None = None, llm_params: dict[str, Any] | None = None
    ) -> RunHandle:
        raise ValueError(f"runs of kind {self.kind.name!r} cannot be forked")

    def resume(self, client: Client, run_id: str, **options: Any) -> RunHandle:
        """Serve again a run whose actors died: start its lead anew from the log (what it
        recorded is not done again; keyed commands append nothing twice). ValueError where
        the kind cannot, or the run's lead never started (nothing to go on from)."""
        raise ValueError(f"runs of kind {self.kind.name!r} cannot be resumed")


class Reading(Part):
    """How a kind's log is read and replayed."""

    def behaviour(self, stream_id: str, first: Event) -> Behaviour[Any] | None:
        """The behaviour that folds `stream_id` (whose first event is `first`), or None for a
        stream of this kind's runs that no behaviour owns (a tool's own calls, say)."""
        return None

    def lead_events(self, records: list[Recorded], run_id: str) -> list[Event]:
        """The events of the run's lead stream, in version order (what `chorus diff` compares).
        ValueError if the run has none."""
        raise ValueError(f"run {run_id} has no lead stream")

    def diff_lines(self, run_a: str, records_a: list[Recorded], run_b: str, records_b: list[Recorded]) -> list[str]:
        """Lines `chorus diff` prints after comparing two runs of this kind event by event,
        for what the kind keeps beyond its lead stream (a relay: its branches' code). None
        by default."""
        return []

    def replay(self, records: list[Recorded], run_id: str) -> ReplayReport:
        """Re-execute the run against its own recording (see `actors.runtime.replay`)."""
        raise NotImplementedError(f"runs of kind {self.kind.name!r} cannot be replayed")

    def describe(self, event: Event, brief: bool = False) -> str | None:
        """A progress line for an event this kind knows, '' to hide it, None if not this kind's."""
        return None

    def present(self, answer: str) -> str:
        """A finished run's answer as the user reads it."""
        return answer

    def admin_only(self, stream_id: str, what: str) -> tuple[str, ...]:
        """What of a record of `stream_id` only an admin may read: dotted paths into an
        event's data (`what` is its type name) or into the stream's folded state (`what` is
        "state"); ("*",) for all of it. Nothing by default. The HTTP API redacts these for
        every principal below admin, on every route that carries them."""
        return ()


class FrontDoor(Part):
    """What a kind adds to the `chorus` command and to the HTTP API."""

    def add_commands(self, subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
        """Add this kind's verbs to the `chorus` command (each sets `func`). None by default."""

    def api_routers(self) -> list[tuple[str, Any]]:
        """What this kind adds to the HTTP API: (prefix, FastAPI `APIRouter`) pairs that
        actors.api.app mounts under its `/v1` (prefix "" for routes at the top, "/sessions"
        for the simulation's). A workload's router lives in its own folder (`api.py`) and
        uses the API's helpers (actors.api: auth scopes, errors, services, visibility).
        None by default."""
        return []


class RunKind:
    """A kind of run: its name, its parts (each a class, made with the kind) and its data."""

    name: ClassVar[str] = ""
    default: ClassVar[bool] = False  # the kind `Client.submit` runs when none is named
    running: ClassVar[type[Running]] = Running
    reading: ClassVar[type[Reading]] = Reading
    front: ClassVar[type[FrontDoor]] = FrontDoor
    wording: ClassVar[Wording] = Wording()
    http: ClassVar[HttpPolicy] = HttpPolicy()

    def __init__(self) -> None:
        # Each part made once, with this kind: `kind.running.submit(...)`.
        self.running = type(self).running(self)  # type: ignore[misc,assignment]
        self.reading = type(self).reading(self)  # type: ignore[misc,assignment]
        self.front = type(self).front(self)  # type: ignore[misc,assignment]

    def __repr__(self) -> str:
        return f"<run kind {self.name!r}>"


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
