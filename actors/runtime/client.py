"""The Python client: submit goals, watch runs, read their events.

    from actors import Client
    with Client() as chorus:                 # local Ray, SQLite in CHORUS_DATA_DIR, local model
        run = chorus.submit("What does README.md say about replay?", root=".")
        for rec in run.events():             # live, until the run ends
            print(rec.event.type_name)
        print(run.wait().answer)
        # or stop it: run.cancel() (or chorus.cancel(run_id)) records it as failed
        # (`cancelled`) and stops its actors, its tools and the scripts they started

`Client(address="HOST:PORT")` joins an existing Ray cluster instead; its store must then
be PostgreSQL, since a SQLite file cannot be shared between nodes.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import uuid
from collections.abc import Iterator
from typing import Any

from actors.runtime.llm.local_server import LocalLlamaServer
from actors.runtime import ray_head
from actors.runtime.perform import tool_error_message
from actors.runtime.registry import Registry
from actors.runtime.result import RunResult
from actors.runtime.runkind import kind_of_submission
from actors.runtime.run import (
    TERMINAL_TYPES,
    Cancel,
    Fail,
    RunLifecycle,
    RunState,
    Submit,
    UnknownRun,
    run_stream,
)
from actors.runtime.settings import ConfigError, Settings
from actors.runtime.shell import ActorShell
from actors.runtime.spawn import spawn_actor
from events.backends import backend_of
from events.errors import ErrorInfo
from events.runs import Budget
from events.store import EventStore, Recorded
from projections.runs import RunsView

# Greedy decoding: small models follow the JSON format best without sampling noise, and
# runs are easier to compare. A step is short; max_tokens stops a runaway reply.
DEFAULT_LLM_PARAMS = {"temperature": 0.0, "max_tokens": 512}


class LlmUnavailable(Exception):
    """The configured LLM endpoint does not answer; nothing was submitted."""


def check_endpoint(base_url: str, api_key: str, timeout_s: float = 5.0) -> None:
    """Fail fast, before a run is written, when the model endpoint is down."""
    import httpx  # lazily: only checking an endpoint needs it

    url = base_url.rstrip("/") + "/models"
    try:
        httpx.get(url, headers={"Authorization": f"Bearer {api_key}"}, timeout=timeout_s)
    except httpx.ReadTimeout:
        return  # it took the connection and is busy (a llama.cpp server serves one completion at a time): up
    except httpx.HTTPError as e:
        raise LlmUnavailable(f"LLM endpoint {base_url} is unreachable: {type(e).__name__}: {e}") from e


class RunHandle:
    def __init__(self, client: Client, run_id: str, ref: Any = None, actor: Any = None) -> None:
        self.client = client
        self.run_id = run_id
        self._ref = ref
        self._actor = actor
        self._cancelled = False  # then the actor's death is ours: nothing more to record
        self._watchers: list[threading.Thread] = []

    def wait(self, timeout: float | None = None) -> RunResult:
        """Block until the run ends; returns its result as the log records it."""
        if self._ref is not None:
            import ray  # lazily: only submitting a run needs Ray; reading runs does not

            try:
                ray.get(self._ref, timeout=timeout)
            except ray.exceptions.GetTimeoutError:
                raise TimeoutError(f"run {self.run_id} still running after {timeout}s") from None
            except Exception as e:  # the actor died for good: record it so the run ends
                if not self._cancelled:
                    self.client.fail_run(self.run_id, e)
        else:
            for _ in self.events(timeout=timeout):
                pass
        return self.result

    def _watch(self) -> None:
        import ray  # lazily: only submitting a run needs Ray; reading runs does not

        try:
            ray.get(self._ref)
        except Exception as e:
            if not self._cancelled:
                self.client.fail_run(self.run_id, e)

    def cancel(self, message: str = "the run was cancelled") -> RunResult:
        """Stop the run: see `Client.cancel`."""
        self._cancelled = True
        result = self.client.cancel(self.run_id, message=message, actor=self._actor)
        for watcher in self._watchers:  # each sees the actor's death now; let it end before
            watcher.join(timeout=30)  # the process does (Ray must not shut down under it)
        return result

    def signal(self, name: str, payload: Any = None) -> RunHandle:
        """Send a signal to this run (see `Client.signal`); a handle to follow it on."""
        return self.client.signal(self.run_id, name, payload)

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
            watcher = threading.Thread(target=self._watch, daemon=True)
            watcher.start()
            self._watchers.append(watcher)
        for rec in store.follow(run_id=self.run_id, stop=stop, timeout=timeout):
            yield rec
            if rec.event.type_name in TERMINAL_TYPES:
                stop.set()
                return


class Client:
    def __new__(cls, address: str | None = None, *args: Any, url: str | None = None, token: str | None = None, **kwargs: Any) -> Any:
        """`Client(url="http://HOST:PORT", token=...)` is the same client over HTTP, talking to
        `chorus serve` (actors.runtime.remote.RemoteClient: the same submit, events, wait)."""
        if url is None and address and address.startswith(("http://", "https://")):
            url = address
        if url is not None:
            # lazily: only a remote client needs httpx
            from actors.runtime.remote import RemoteClient

            return RemoteClient(url, token=token)
        if token is not None:
            raise ValueError("token= goes with url=: Client(url='http://HOST:PORT', token=...)")
        return super().__new__(cls)

    def __init__(
        self,
        address: str | None = None,
        *,
        settings: Settings | None = None,
        llm: Any | None = None,
        namespace: str = "chorus",
        start_ray: bool = True,
        url: str | None = None,  # see __new__
        token: str | None = None,
    ) -> None:
        self.settings = settings or Settings.from_env()
        self.address = address or os.environ.get("CHORUS_RAY_ADDRESS") or None
        # None: the machine's shared local head (actors.runtime.ray_head); "local": a new local
        # instance of this process's own; "auto": a `ray start` cluster of this machine; any
        # other address is a cluster.
        if self.address not in (None, "local", "auto") and backend_of(self.settings.store_url) != "postgres":
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
        """Connect to Ray unless connected: the address given, or the machine's shared local head
        (started if none runs; `CHORUS_RAY_IDLE_S=0`: a local instance of this process's own)."""
        import ray  # lazily: only submitting a run needs Ray; reading runs does not

        if ray.is_initialized():
            return
        if not self._start_ray:
            raise ConfigError("Ray is not initialised and this client may not start it")
        address, runtime_env = self.address, None
        if address is None and self.settings.ray_idle_s <= 0:
            address = "local"  # a Ray of this process's own
        elif address is None:  # the machine's shared head (actors.runtime.ray_head)
            try:
                address = ray_head.shared_head(
                    self.settings.ray_port, self.settings.ray_idle_s, self.settings.data_dir / "logs" / "ray-head.log"
                )
                runtime_env = ray_head.driver_runtime_env()
            except ray_head.SharedRayError:  # another Python's head, or its port taken: a Ray of its own
                address = "local"
        ray.init(
            address=address,
            namespace=self.namespace,
            runtime_env=runtime_env,
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
        kind: str | None = None,
        agent: Any = None,
        budget: Budget | None = None,
        run_id: str | None = None,
        **options: Any,
    ) -> RunHandle:
        """Start a run for `goal`; returns at once with a handle to it.

        `kind` names the run's kind ("react" by default; "researcher", "orchestrator",
        "task", or any registered `RunKind`); `agent` is an `@agent` function (or its import
        path) to run instead (a run of kind "function"). `options` are the kind's (for
        "react": `root`, `tools`, `max_iterations`, `llm_params`; for an agent function:
        `root`, `model`, `llm_params`, and `options`, its keyword arguments). Bad input raises,
        one line, before anything is written: RegistryError for an unknown kind,
        ValueError for both `kind` and `agent`, or for options the kind does not take.
        `agent="researcher"` (a kind's name) is deprecated: it runs that kind, with a
        DeprecationWarning, until 0.2.0."""
        kind, function = kind_of_submission(kind, agent, is_function=_is_function_agent)
        if function is not None:
            options["function"] = function
        run_kind = Registry.run_kind(kind) if kind else Registry.default_run_kind()
        if not goal.strip():
            raise ValueError("the goal is empty")
        for name, limit in (budget or Budget()).model_dump().items():
            if limit is not None and limit <= 0:
                raise ValueError(f"budget {name} must be positive, not {limit}")
        return run_kind.running.submit(self, goal, run_id=run_id or new_run_id(), budget=budget or Budget(), **options)

    def begin_run(
        self,
        run_id: str,
        *,
        goal: str,
        kind: str,
        params: dict[str, Any],
        budget: Budget | None = None,
        forked_from: str | None = None,
    ) -> None:
        """Record a new run (`RunSubmitted` on `run:ID`). ValueError if the id is taken."""
        lifecycle = ActorShell(RunLifecycle(), run_stream(run_id), self.store, run_id=run_id).load()
        if lifecycle.state.status != "new":
            raise ValueError(f"run {run_id} exists already")
        lifecycle.handle(
            Submit(
                key="submit",
                goal=goal,
                kind=kind,
                params=params,
                budget=budget or Budget(),
                forked_from=forked_from,
            )
        )

    def spawn(self, run_id: str, actor_class: type, name: str, args: tuple[Any, ...], start: tuple[Any, ...]) -> RunHandle:
        """Serve a run on a Ray actor `actor_class(*args)` named `name`, calling its
        `serve(*start)`, each command in `start` sent in its wire form (`actors.runtime.wire`:
        the actor takes it back with `from_wire`); Ray restarts it and retries the call after a crash. An actor class
        with a `stop()` method gets a second thread, so `cancel` can call it while `serve`
        runs."""
        actor, ref = spawn_actor(self.settings.placement, actor_class, name, args, start)
        return RunHandle(self, run_id, ref, actor)

    def fork(
        self,
        run_id: str,
        at: int,
        *,
        model: str | None = None,
        llm_params: dict[str, Any] | None = None,
    ) -> RunHandle:
        """A new run that starts from `run_id` as it was at global position `at` and continues
        live (optionally with another model or parameters). The original run is untouched;
        the new one records where it came from."""
        state = self.run_state(run_id)
        kind = Registry.run_kind(state.kind) if state.kind else Registry.default_run_kind()
        return kind.running.fork(self, run_id, at, model=model, llm_params=llm_params)

    def resume(self, run_id: str, **options: Any) -> RunHandle:
        """Serve again a run whose actors died (its process was killed, its machine went
        away): the kind's `running.resume` starts its lead anew, which goes on from the log, and
        idempotency keys append nothing twice. ValueError for a run that has ended or whose
        kind cannot resume; UnknownRun for an unknown id. The run's status in `chorus runs`
        stays "running" while nothing serves it (the log cannot tell a slow run from a
        dead one): this is the remedy."""
        state = self.run_state(run_id)
        if state.status in ("completed", "failed"):
            raise ValueError(f"run {run_id} has {state.status}: there is nothing to resume")
        kind = Registry.run_kind(state.kind) if state.kind else Registry.default_run_kind()
        return kind.running.resume(self, run_id, **options)

    def signal(self, run_id: str, name: str, payload: Any = None, *, sent_by: str | None = None) -> RunHandle:
        """Send signal `name` (a JSON-able `payload`) to a run whose agent function waits for
        it (`ctx.wait_for(name)`): recorded on the run's log, and the run served again if it
        waits; returns a handle to follow it. ValueError for a run that has ended or whose
        kind takes no signals; UnknownRun for an unknown id."""
        state = self.run_state(run_id)
        if state.status in ("completed", "failed"):
            raise ValueError(f"run {run_id} has {state.status}: it takes no more signals")
        _is_function_agent("")  # the function kind registered, entry point or not
        kind = Registry.run_kind(state.kind) if state.kind else Registry.default_run_kind()
        deliver = getattr(kind.running, "signal", None)
        if deliver is None:
            raise ValueError(f"runs of kind {kind.name!r} take no signals (an @agent function's do: ctx.wait_for)")
        return deliver(self, run_id, name, payload, sent_by=sent_by)

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
        """Runs, newest first: the `runs` view (projections/runs.py), caught up first, so a
        call reads the events appended since the last one, not the whole log."""
        return RunsView.open(self.store).list(limit or None)

    def events(self, run_id: str) -> list[Recorded]:
        self.run_state(run_id)
        return list(self.store.read_all(run_id=run_id))

    def fail_run(self, run_id: str, exc: BaseException) -> None:
        """Record that the actor serving the run died for good, so the run ends."""
        shell = ActorShell(RunLifecycle(), run_stream(run_id), self.store, run_id=run_id).load()
        error = ErrorInfo(type="actor_died", reason=type(exc).__name__, message=tool_error_message(exc)[:500])
        shell.handle(Fail(key="finish", error=error))

    def cancel(self, run_id: str, *, message: str = "the run was cancelled", actor: Any = None) -> RunResult:
        """Stop a run: record it as failed with an error of type `cancelled` (RunFailed), then
        stop the Ray actor serving it (`actor`, or the one named after its lead stream), which
        takes its tool actors with it. Idempotent: a finished run stays as it ended.
        UnknownRun for an id the store does not hold."""
        state = self.run_state(run_id)
        shell = ActorShell(RunLifecycle(), run_stream(run_id), self.store, run_id=run_id).load()
        shell.handle(Cancel(key="cancel", message=message))  # first: so no watcher records `actor_died`
        self._stop_actor(actor, state.lead_stream)
        return self.run_result(run_id)

    def _stop_actor(self, actor: Any, name: str | None) -> None:
        if self.address and "ray" not in sys.modules:
            self.ensure_ray()  # a cluster: its actors may have been started by another client
        if "ray" not in sys.modules:
            return  # no Ray in this process, and none to join: it runs none of this run's actors
        import ray  # lazily: reading runs needs no Ray; only stopping an actor does

        if not ray.is_initialized():
            return
        if actor is None and name:
            try:
                actor = ray.get_actor(name)  # the namespace `spawn` named it in
            except ValueError:
                return  # gone already
        if actor is None:
            return
        try:
            ray.get(actor.stop.remote(), timeout=10)  # an actor's own clean-up (scripts it started)
        except AttributeError:
            pass  # the actor has no `stop`
        except Exception:  # dead or stuck: killing it below is what matters
            logging.getLogger(__name__).debug("stop of %s failed", name, exc_info=True)
        ray.kill(actor, no_restart=True)



def _is_function_agent(agent: Any) -> bool:
    from actors.runtime import function_agent  # lazily: it registers the "function" kind

    return function_agent.is_function_agent(agent)


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]
