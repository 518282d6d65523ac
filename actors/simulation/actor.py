"""The simulation's Ray shells: a `DirectorActor` per session and a `SynthActor` per synth.

Thin on purpose: each opens the store and wraps its shell (`session.py`). The director
asks every affected synth for its cognitive call at once (`think.remote`), so a
microcycle's calls run concurrently, each recorded in its synth's stream by its own actor.
"""

from __future__ import annotations

from typing import Any

from actors.runtime.llm.gateway import LlmGateway
from actors.runtime.llm.providers import provider_from_settings
from actors.runtime.settings import Settings
from actors.simulation.director import CognitionTask, CycleResult, DirectorConfig
from actors.simulation.progress import cycle_summary
from actors.simulation.session import DirectorShell, SynthShell
from events.base import Event
from events.store import EventStore

DEFAULT_SYNTH_PARAMS = {"temperature": 0.0, "max_tokens": 400}


class SynthActor:
    def __init__(
        self, settings: Settings, run_id: str, synth_id: str, llm: Any = None, params: dict[str, Any] | None = None
    ) -> None:
        self.store = EventStore(settings.store_url)
        gateway = LlmGateway(llm if llm is not None else provider_from_settings(settings))
        model = getattr(llm, "model", None) or settings.llm_model
        self.shell = SynthShell(self.store, run_id, synth_id, gateway, model, {**DEFAULT_SYNTH_PARAMS, **(params or {})})

    def think(self, task: CognitionTask, seed: int) -> list[Event]:
        return self.shell.think(task, seed)


class DirectorActor:
    def __init__(
        self,
        settings: Settings,
        run_id: str,
        synths: dict[str, Any],
        config: DirectorConfig | None = None,
        check: Any = None,
    ) -> None:
        self.store = EventStore(settings.store_url)
        self.synths = synths  # synth id -> SynthActor handle
        extra = {"check": check} if check is not None else {}
        self.shell = DirectorShell(
            self.store, run_id, self._cognize, config=config, snapshot_every=max(1, settings.snapshot_every // 10), **extra
        )

    def _cognize(self, tasks: list[CognitionTask]) -> list[list[Event]]:
        import ray  # lazily: the pure cycle and replay never load Ray

        seed = self.shell.canonical.world.random_seed
        return ray.get([self.synths[t.synth_id].think.remote(t, seed) for t in tasks])

    def step(self, cycles: int = 1) -> list[dict[str, Any]]:
        results: list[CycleResult] = self.shell.step(cycles)
        self.shell.save_snapshot()
        return [cycle_summary(r) for r in results]

    def stimulus(self, text: str, source: str = "operator") -> int:
        return self.shell.stimulus(text, source).position

    def ping(self) -> bool:
        return True
