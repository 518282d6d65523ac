"""A simulation session from Python: `simulate(client, pack)` (or `open_session(client, id)`).

    from actors import Client
    from actors.simulation.client import simulate
    with Client() as chorus:
        session = simulate(chorus, "actors/simulation/packs/lighthouse.yaml")
        session.stimulus("A ship's horn sounds from the sea.")
        for cycle in session.step(3):
            print(cycle["cycle"], cycle["outcomes"])
        print(session.overview())

A session is a run (its id is a run id), so `chorus runs / log / replay / fork / diff`
work on it. The director and the synths are Ray actors (`ray=True`, the default); with
`ray=False` they run in this process (synth calls on threads), which tests use.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from actors.runtime.client import new_run_id
from actors.runtime.llm.gateway import LlmGateway
from actors.runtime.llm.providers import provider_from_settings
from actors.runtime.placement import ray_options
from actors.runtime.run import RunLifecycle, Start, run_stream
from actors.runtime.shell import ActorShell
from actors.simulation.actor import DEFAULT_SYNTH_PARAMS, DirectorActor, SynthActor
from actors.simulation.director import CognitionTask, DirectorConfig
from actors.simulation.loader import CompiledPack, load_pack
from actors.simulation.overview import overview
from actors.simulation.progress import cycle_summary
from actors.simulation.session import Canonical, DirectorShell, SynthShell, UnknownSession, record_session
from actors.simulation.streams import director_stream
from events.base import Event

KIND = "simulation"


def create_session(
    client: Any,
    pack_path: str | Path,
    *,
    run_id: str,
    config: DirectorConfig | None = None,
    pack: CompiledPack | None = None,
    llm_params: dict[str, Any] | None = None,
) -> str:
    """Validate the pack, then record the session: RunSubmitted, the world's and synths'
    first events (one transaction), RunStarted. A bad pack raises PackError (a ValueError)
    before anything is written."""
    pack = pack or load_pack(pack_path)
    config = config or DirectorConfig()
    client.begin_run(
        run_id,
        goal=f"simulate {pack.name}",
        kind=KIND,
        params={
            "pack": str(pack_path), "pack_digest": pack.digest, "director": config.model_dump(),
            "llm_params": {**DEFAULT_SYNTH_PARAMS, **(llm_params or {})},
        },  # fmt: skip
    )
    record_session(client.store, run_id, pack)
    run = ActorShell(RunLifecycle(), run_stream(run_id), client.store, run_id=run_id).load()
    run.handle(Start(key="start", lead_stream=director_stream(run_id)))
    return run_id


class Simulation:
    """A handle on one session: step it, queue stimuli, read it."""

    def __init__(self, client: Any, run_id: str, *, ray: bool = True, llm: Any = None, check: Any = None) -> None:
        self.client = client
        self.run_id = run_id
        self.ray = ray
        self.llm = llm if llm is not None else client.llm
        self.check = check
        state = client.run_state(run_id)
        if state.kind != KIND:
            raise UnknownSession(f"run {run_id} is not a simulation session (it is {state.kind or 'react'})")
        self.config = DirectorConfig.model_validate(state.params.get("director", {}))
        self.llm_params = {**DEFAULT_SYNTH_PARAMS, **state.params.get("llm_params", {})}
        self._director: Any = None
        self._local: DirectorShell | None = None
        self._synth_actors: dict[str, Any] = {}

    # -- acting on the session ---------------------------------------------------------------

    def step(self, cycles: int = 1) -> list[dict[str, Any]]:
        """Run `cycles` director cycles; each commits or rolls back as one transaction."""
        if cycles < 1:
            raise ValueError(f"cycles must be at least 1, not {cycles}")
        if not self.ray:
            shell = self._local_shell()
            results = [cycle_summary(r) for r in shell.step(cycles)]
            shell.save_snapshot()
            return results
        import ray  # lazily: reading a session needs no Ray

        return ray.get(self._director_actor().step.remote(cycles))

    def stimulus(self, text: str, source: str = "operator") -> None:
        """Queue outside input; it reaches the synths through perception on the next step."""
        if not text.strip():
            raise ValueError("the stimulus is empty")
        if self._director is not None:
            import ray  # lazily: see step

            ray.get(self._director.stimulus.remote(text, source))
        else:
            # Without a running director, the log is the only writer's state: a local shell.
            self._local_shell().stimulus(text, source)
            if self.ray:
                self._local = None  # the director actor will fold it from the log

    def overview(self, at: int | None = None) -> dict[str, Any]:
        return overview(self.client.store, self.run_id, at=at)

    def close(self) -> None:
        if self._director is not None:
            import ray  # lazily: see step

            for handle in [self._director, *self._synth_actors.values()]:
                ray.kill(handle, no_restart=True)
            self._director = None
            self._synth_actors = {}

    def shell(self) -> DirectorShell:
        """The in-process director shell (as with `ray=False`): the canonical state, and
        the commits (cycles, stimuli, admin patches) of a process that drives the session
        itself, such as the HTTP control plane."""
        return self._local_shell()

    # -- the actors -----------------------------------------------------------------------

    def _local_shell(self) -> DirectorShell:
        if self._local is None:
            store = self.client.store
            canonical = Canonical.load(store, self.run_id)
            settings = self.client.settings if self.llm is not None else self.client.ensure_llm()
            gateway = LlmGateway(self.llm if self.llm is not None else provider_from_settings(settings))
            model = getattr(self.llm, "model", None) or settings.llm_model
            synths = {
                sid: SynthShell(store, self.run_id, sid, gateway, model, dict(self.llm_params))
                for sid in canonical.synths
            }
            pool = ThreadPoolExecutor(max_workers=max(1, len(synths)))
            seed = canonical.world.random_seed

            def cognize(tasks: list[CognitionTask]) -> list[list[Event]]:
                return list(pool.map(lambda t: synths[t.synth_id].think(t, seed), tasks))

            extra = {"check": self.check} if self.check is not None else {}
            self._local = DirectorShell(store, self.run_id, cognize, config=self.config, **extra)
        return self._local

    def _director_actor(self) -> Any:
        if self._director is not None:
            return self._director
        import ray  # lazily: see step

        self.client.ensure_ray()
        settings = self.client.settings if self.llm is not None else self.client.ensure_llm()
        canonical = Canonical.load(self.client.store, self.run_id)
        options = {"max_restarts": 3, "num_cpus": 0, "max_task_retries": 0}
        where = settings.placement  # CHORUS_PLACEMENT, roles `synth` and `director`
        self._synth_actors = {
            sid: ray.remote(SynthActor)
            .options(**options, **ray_options(where, f"synth:{sid}"))
            .remote(settings, self.run_id, sid, self.llm, self.llm_params)
            for sid in canonical.synths
        }
        extra = {"check": self.check} if self.check is not None else {}
        # The director is not restarted: a cycle cut off is simply not committed, and the
        # next step (a new actor) folds the log again.
        self._director = (
            ray.remote(DirectorActor)
            .options(max_restarts=0, num_cpus=0, **ray_options(where, "director"))
            .remote(settings, self.run_id, self._synth_actors, self.config, **extra)
        )
        return self._director


def simulate(
    client: Any,
    pack: str | Path,
    *,
    run_id: str | None = None,
    ray: bool = True,
    llm: Any = None,
    llm_params: dict[str, Any] | None = None,
    **config: Any,
) -> Simulation:
    """`simulate(client, pack)`: a new session from a content pack, ready to step.
    `llm_params` (temperature, max_tokens) are the synths' model parameters, kept with the
    session; `config` is DirectorConfig's (max_microcycles, max_events)."""
    run_id = run_id or new_run_id()
    create_session(client, pack, run_id=run_id, config=DirectorConfig(**config), llm_params=llm_params)
    return Simulation(client, run_id, ray=ray, llm=llm)


def open_session(client: Any, run_id: str, *, ray: bool = True, llm: Any = None) -> Simulation:
    """`open_session(client, id)`: an existing session (its id is its run id)."""
    return Simulation(client, run_id, ray=ray, llm=llm)
