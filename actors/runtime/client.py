"""The Python client: submit goals, watch runs, read their events.

    from actors import Client
    with Client() as chorus:                 # local Ray, SQLite in CHORUS_DATA_DIR, local model
        run = chorus.submit("What does README.md say about replay?", root=".")
        for rec in run.events():             # live, until the run ends
            print(rec.event.type_name)
        print(run.wait().answer)

`Client(address="HOST:PORT")` joins an existing Ray cluster instead; its store must then
be PostgreSQL, since a SQLite file cannot be shared between nodes.
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from actors.runtime.agent_actor import AgentActor, agent_stream
from actors.runtime.registry import Registry
from actors.runtime.run import TERMINAL_TYPES, RunLifecycle, RunState, Submit, UnknownRun, run_stream
from actors.runtime.settings import ConfigError, Settings
from actors.runtime.shell import ActorShell
from events.agent import AgentForked, ToolSpec
from events.errors import ErrorInfo
from events.runs import Budget
from events.store import EventStore, Recorded, backend_of

DEFAULT_TOOLS = ("search_files", "read_file")
# Greedy decoding: small models follow the JSON format best without sampling noise, and
# runs are easier to compare. A step is short; max_tokens stops a runaway reply.
DEFAULT_LLM_PARAMS = {"temperature": 0.0, "max_tokens": 512}


class LlmUnavailable(Exception):
    """The configured LLM endpoint does not answer; nothing was submitted."""


def check_endpoint(base_url: str, api_key: str, timeout_s: float = 5.0) -> None:
    """Fail fast, before a run is written, when the model endpoint is down."""
    import httpx

    url = base_url.rstrip("/") + "/models"
    try:
        httpx.get(url, headers={"Authorization": f"Bearer {api_key}"}, timeout=timeout_s)
    except httpx.HTTPError as e:
        raise LlmUnavailable(f"LLM endpoint {base_url} is unreachable: {type(e).__name__}: {e}") from e


@dataclass(frozen=True)
class RunResult:
    run_id: str
    status: str  # completed | failed | submitted | running
    answer: str | None
    error: ErrorInfo | None

    @property
    def ok(self) -> bool:
        return self.status == "completed"


class RunHandle:
    def __init__(self, client: Client, run_id: str, ref: Any = None, actor: Any = None) -> None:
        self.client = client
        self.run_id = run_id
        self._ref = ref
        self._actor = actor

    def wait(self, timeout: float | None = None) -> RunResult:
        """Block until the run ends; returns its result as the log records it."""
        if self._ref is not None:
            import ray

            try:
                ray.get(self._ref, timeout=timeout)
            except ray.exceptions.GetTimeoutError:
                raise TimeoutError(f"run {self.run_id} still running after {timeout}s") from None
            except Exception as e:  # the actor died for good: record it so the run ends
                self.client._fail_run(self.run_id, e)
        else:
            for _ in self.events(timeout=timeout):
                pass
        return self.result

    def _watch(self) -> None:
        import ray

        try:
            ray.get(self._ref)
        except Exception as e:
            self.client._fail_run(self.run_id, e)

    @property
    def result(self) -> RunResult:
        return self.client.run_result(self.run_id)

    def events(self, *, follow: bool = True, timeout: float | None = None) -> Iterator[Recorded]:
        """The run's events in global order; with `follow`, live until the run ends."""
        store = self.client.store
        if not follow:
            yield from store.read_all(run_id=self.run_id)
            return
        stop = threading.Event()
        if self._ref is not None:
            # If the actor dies for good, no terminal event would come: record one.
            threading.Thread(target=self._watch, daemon=True).start()
        for rec in store.follow(run_id=self.run_id, stop=stop, timeout=timeout):
            yield rec
            if rec.event.type_name in TERMINAL_TYPES:
                stop.set()
                return


class Client:
    def __init__(
        self,
        address: str | None = None,
        *,
        settings: Settings | None = None,
        llm: Any | None = None,
        namespace: str = "chorus",
        start_ray: bool = True,
    ) -> None:
        self.settings = settings or Settings.from_env()
        self.address = address or os.environ.get("CHORUS_RAY_ADDRESS") or None
        if self.address and backend_of(self.settings.store_url) != "postgres":
            raise ConfigError(
                "a Ray cluster needs a shared event store: set CHORUS_STORE_URL=postgresql://... "
                f"(now {self.settings.store_url})"
            )
        self.settings.data_dir.mkdir(parents=True, exist_ok=True)
        self.store = EventStore(self.settings.store_url)
        self.llm = llm
        self.namespace = namespace
        self._start_ray = start_ray
        self._server: Any = None
        self._ray_started = False

    # -- lifecycle -------------------------------------------------------------------

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None
        self.store.close()

    def ensure_ray(self) -> None:
        """Connect to Ray (or start a local instance) unless already connected."""
        import ray

        if ray.is_initialized():
            return
        if not self._start_ray:
            raise ConfigError("Ray is not initialised and this client may not start it")
        ray.init(
            address=self.address,
            namespace=self.namespace,
            include_dashboard=False,
            logging_level=logging.ERROR,
            log_to_driver=bool(os.environ.get("CHORUS_RAY_LOGS")),
            configure_logging=True,
        )
        self._ray_started = True

    def ensure_llm(self) -> Settings:
        """The settings actors get: with the embedded server's URL once it is up (started
        here when the settings use the embedded model), or the endpoint checked."""
        if self.llm is not None:
            return self.settings
        if self.settings.uses_embedded_llm:
            if self._server is None:
                from actors.runtime.llm.local_server import LocalLlamaServer

                self._server = LocalLlamaServer(self.settings)
                self._server.start()
            update: dict[str, Any] = {"llm_base_url": self._server.base_url}
            if self.settings.llm_structured == "auto":
                update["llm_structured"] = "json_object"  # llama.cpp refuses json_schema
            return self.settings.model_copy(update=update)
        check_endpoint(self.settings.llm_base_url or "", self.settings.llm_api_key)
        return self.settings

    # -- runs ------------------------------------------------------------------------

    def submit(
        self,
        goal: str,
        *,
        root: str | os.PathLike[str] = ".",
        agent: str = "react",
        tools: Sequence[str] | None = None,
        repo: str | None = None,
        max_iterations: int = 10,
        budget: Budget | None = None,
        llm_params: dict[str, Any] | None = None,
        run_id: str | None = None,
    ) -> RunHandle:
        """Start a run for `goal`; returns at once with a handle to it.

        `agent` picks the lead behaviour: "react" (default) or "researcher", which first
        indexes `repo` (a folder or git URL) and ends with a markdown report. `tools`
        defaults to the agent's own default tools."""
        if not goal.strip():
            raise ValueError("the goal is empty")
        if max_iterations < 1:
            raise ValueError(f"max_iterations must be at least 1, not {max_iterations}")
        for name, limit in (budget or Budget()).model_dump().items():
            if limit is not None and limit <= 0:
                raise ValueError(f"budget {name} must be positive, not {limit}")
        root_path = Path(root).expanduser().resolve()
        if not root_path.is_dir():
            raise ValueError(f"root folder {root} does not exist")
        agent_cls = Registry.agent_class(agent)  # fail before writing anything if unknown
        if tools is None:
            tools = agent_cls.tools_for(repo) if hasattr(agent_cls, "tools_for") else agent_cls.default_tools
        specs = [_tool_spec(name) for name in tools]
        settings = self.ensure_llm()
        self.ensure_ray()

        run_id = run_id or uuid.uuid4().hex[:12]
        budget = budget or Budget()
        params = dict(DEFAULT_LLM_PARAMS if llm_params is None else llm_params)
        lifecycle = ActorShell(RunLifecycle(), run_stream(run_id), self.store, run_id=run_id).load()
        if lifecycle.state.status != "new":
            raise ValueError(f"run {run_id} exists already")
        lifecycle.handle(
            Submit(
                key="submit",
                goal=goal,
                agent=agent,
                params={
                    "root": str(root_path),
                    "repo": repo,
                    "tools": list(tools),
                    "max_iterations": max_iterations,
                    "llm_params": params,
                },
                budget=budget,
            )
        )
        extra = {"repo": repo} if repo else {}
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
        return self._spawn(run_id, agent, settings, start)

    def _spawn(self, run_id: str, agent: str, settings: Settings, start: Any) -> RunHandle:
        """The run's lead agent as a Ray actor that Ray restarts and retries after a crash."""
        import ray

        actor = (
            ray.remote(AgentActor)
            .options(name=agent_stream(run_id), max_restarts=3, max_task_retries=3, num_cpus=0)
            .remote(settings, run_id, agent, self.llm)
        )
        return RunHandle(self, run_id, actor.serve.remote(start), actor)

    def fork(
        self,
        run_id: str,
        at: int,
        *,
        model: str | None = None,
        llm_params: dict[str, Any] | None = None,
    ) -> RunHandle:
        """A new run that starts from `run_id`'s lead agent (or workflow) as it was at global
        position `at` and continues live (optionally with another model or parameters). The
        original run is untouched; the new one records where it came from."""
        if self.run_state(run_id).agent == "task":  # a workflow re-runs: actors.tasks.fork
            from actors.tasks.client import fork_task

            return fork_task(self, run_id, at, model=model, llm_params=llm_params)
        from projections.replay import agent_streams, run_records

        records = run_records(self.store, run_id)
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
        if prefix[-1].type_name in ("AnswerGiven", "AgentFailed"):
            raise ValueError(
                f"the agent of run {run_id} had finished by position {at}; fork at an earlier position"
            )
        original = self.run_state(run_id)
        settings = self.ensure_llm()
        self.ensure_ray()
        new_id = uuid.uuid4().hex[:12]
        origin = f"{run_id}@{at}"
        lifecycle = ActorShell(RunLifecycle(), run_stream(new_id), self.store, run_id=new_id).load()
        lifecycle.handle(
            Submit(
                key="submit",
                goal=original.goal,
                agent=original.agent,
                params={**original.params, "forked_from": origin, "model": model, "llm_params": llm_params},
                budget=original.budget,
                forked_from=origin,
            )
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
        self.store.append(stream, copies, 0)
        forked = AgentForked(origin_run=run_id, origin_position=at, model=model, params=llm_params)
        self.store.append(stream, [forked.stamp(run_id=new_id, command_id="fork")], len(copies))
        start = Registry.agent_class(original.agent)().start_command(prefix[0])
        return self._spawn(new_id, original.agent, settings, start)

    def run(self, goal: str, **kwargs: Any) -> RunResult:
        return self.submit(goal, **kwargs).wait()

    def get_run(self, run_id: str) -> RunHandle:
        self.run_state(run_id)
        return RunHandle(self, run_id)

    def run_state(self, run_id: str) -> RunState:
        shell = ActorShell(RunLifecycle(), run_stream(run_id), self.store).load()
        if shell.version == 0:
            raise UnknownRun(f"no run with id {run_id!r}")
        return shell.state

    def run_result(self, run_id: str) -> RunResult:
        state = self.run_state(run_id)
        return RunResult(run_id, state.status, state.result, state.error)

    def runs(self, limit: int | None = None) -> list[dict[str, Any]]:
        """Runs, newest first, from their lifecycle events."""
        rows: dict[str, dict[str, Any]] = {}
        for rec in self.store.read_all(types=("RunSubmitted", "RunCompleted", "RunFailed")):
            e = rec.event
            if e.type_name == "RunSubmitted":
                rows[e.run_id] = {
                    "run_id": e.run_id, "status": "submitted", "goal": e.goal,  # type: ignore[attr-defined]
                    "agent": e.agent, "forked_from": e.forked_from,  # type: ignore[attr-defined]
                    "submitted_at": e.timestamp, "ended_at": None,
                }  # fmt: skip
            elif e.run_id in rows:
                rows[e.run_id]["status"] = "completed" if e.type_name == "RunCompleted" else "failed"
                rows[e.run_id]["ended_at"] = e.timestamp
        out = sorted(rows.values(), key=lambda r: r["submitted_at"], reverse=True)
        return out[:limit] if limit else out

    def events(self, run_id: str) -> list[Recorded]:
        self.run_state(run_id)
        return list(self.store.read_all(run_id=run_id))

    def _fail_run(self, run_id: str, exc: BaseException) -> None:
        from actors.runtime.effects import tool_error_message
        from actors.runtime.run import Fail

        shell = ActorShell(RunLifecycle(), run_stream(run_id), self.store, run_id=run_id).load()
        error = ErrorInfo(type="actor_died", reason=type(exc).__name__, message=tool_error_message(exc)[:500])
        shell.handle(Fail(key="finish", error=error))


def _tool_spec(name: str) -> ToolSpec:
    cls = Registry.tool_class(name)
    return ToolSpec(
        name=name, signature=cls.signature(), description=cls.description, topic=Registry.topic_of(name)
    )
