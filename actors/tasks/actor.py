"""The Ray shell that serves one workflow run. Thin on purpose: it opens the store and the
model and calls `runner.serve`, which does the rest and closes the run.

Ray restarts it after a crash and re-sends `serve`; the workflow then re-runs against its
own log (see `journal.py`): what was recorded is checked and served, not done again.
"""

from __future__ import annotations

from typing import Any

from actors.runtime.llm.providers import provider_from_settings
from actors.runtime.settings import Settings
from actors.tasks.runner import serve
from actors.tasks.workflow import ForkWorkflow, StartWorkflow
from events.store import EventStore


class TaskActor:
    def __init__(self, settings: Settings, run_id: str, llm: Any | None = None) -> None:
        self.run_id = run_id
        self.store = EventStore(settings.store_url)
        self.provider = llm if llm is not None else provider_from_settings(settings)

    def serve(self, start: StartWorkflow, fork: ForkWorkflow | None = None) -> dict[str, Any]:
        result = serve(self.store, self.run_id, start, self.provider, fork=fork)
        return result.model_dump(mode="json")
