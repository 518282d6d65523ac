"""The Ray actor that serves a relay run: the Scheduler's home, driving the Builder and the
Verifier (seed 004: "a Ray actor that is the relay's single source of truth").

Thin on purpose, like actors.agent.actor.AgentActor: it opens the store with the settings
it is given (the driver resolved the model endpoint already), then `serve` runs
`serve_relay`. Ray restarts it after a crash and re-sends `serve`; the scheduler's shell
rehydrates from the log and the effects already recorded in the builder's and verifier's
streams are served from there, so nothing is called or appended twice. Plain Python: a
test calls it in-process, `RelayRun.submit(..., ray=True)` spawns it through `Client.spawn`.
"""

from __future__ import annotations

from typing import Any

from actors.relay.session import serve_relay
from actors.runtime.client import Client
from actors.runtime.settings import Settings


class RelayActor:
    def __init__(self, settings: Settings, run_id: str, llm: Any | None = None) -> None:
        self.run_id = run_id
        if llm is None:
            from actors.runtime.llm.providers import provider_from_settings

            llm = provider_from_settings(settings)
        self.client = Client(settings=settings, llm=llm, start_ray=False)

    def serve(self) -> dict[str, Any]:
        """Run the relay to its end (or resume it) and close the run; returns a summary."""
        state = serve_relay(self.client, self.run_id)
        return {
            "run_id": self.run_id,
            "status": state.status,
            "passed": state.passed,
            "escalated": state.escalated,
            "tokens": state.tokens_used,
        }

    def close(self) -> None:
        self.client.close()
