"""The Ray shell that serves one workflow run. Thin on purpose: it opens the store and the
model and calls `runner.serve`, which does the rest and closes the run.

Ray restarts it after a crash and re-sends `serve`; the workflow then re-runs against its
own log (see `journal.py`): what was recorded is checked and served, not done again.

`stop` (called by `Client.cancel` on a second thread, just before it kills the actor) kills
the scripts the workflow started, which lead process groups of their own and would outlive
a killed actor, and holds back any tool result still in flight, so nothing of the
cancelled call is recorded.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, cast

from actors.runtime.llm.providers import provider_from_settings
from actors.runtime.settings import Settings
from actors.runtime.wire import from_wire
from actors.tasks.runner import serve
from actors.tasks.tools import workspace_tools
from actors.tasks.workflow import ForkWorkflow, StartWorkflow
from events.store import EventStore


class TaskActor:
    def __init__(self, settings: Settings, run_id: str, llm: Any | None = None) -> None:
        self.run_id = run_id
        self.store = EventStore(settings.store_url)
        self.provider = llm if llm is not None else provider_from_settings(settings)
        self.stopped = threading.Event()

    def serve(self, start: StartWorkflow | bytes, fork: ForkWorkflow | bytes | None = None) -> dict[str, Any]:
        start = cast(StartWorkflow, from_wire(start))  # `Client.spawn` sends commands in their wire form
        fork = cast(ForkWorkflow, from_wire(fork)) if fork is not None else None
        tools = StoppableTools(workspace_tools(start.workspace), self.stopped)
        result = serve(self.store, self.run_id, start, self.provider, tools=tools, fork=fork)
        return result.model_dump(mode="json")

    def stop(self) -> list[int]:
        """Kill the scripts running for this workflow; returns their process ids."""
        self.stopped.set()
        killed: list[int] = []
        for pid in child_processes(os.getpid()):
            try:
                if os.getpgid(pid) == pid:  # a script: it leads its own group (tools.py)
                    os.killpg(pid, signal.SIGKILL)
                    killed.append(pid)
            except ProcessLookupError:
                pass
        return killed


class StoppableTools(Mapping[str, Any]):
    """The workspace's tools; once `stopped`, a call that returns never hands its result on
    (its thread waits for the actor to be killed)."""

    def __init__(self, tools: Mapping[str, Any], stopped: threading.Event) -> None:
        self.tools = tools
        self.stopped = stopped

    def __getitem__(self, name: str) -> Any:
        return _Stoppable(self.tools[name], self.stopped)

    def __iter__(self) -> Iterator[str]:
        return iter(self.tools)

    def __len__(self) -> int:
        return len(self.tools)


class _Stoppable:
    def __init__(self, tool: Any, stopped: threading.Event) -> None:
        self.tool = tool
        self.stopped = stopped

    def execute(self, **args: Any) -> Any:
        try:
            return self.tool.execute(**args)
        finally:
            if self.stopped.is_set():
                threading.Event().wait()  # cancelled: the actor is about to be killed


def child_processes(parent: int) -> list[int]:
    """Process ids whose parent is `parent` (Linux /proc; elsewhere none are found)."""
    found: list[int] = []
    proc = Path("/proc")
    if not proc.is_dir():
        return found
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 1 and fields[1] == str(parent):
            found.append(int(entry.name))
    return found
