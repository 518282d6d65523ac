"""The Ray shell that serves a run's lead agent (any registered agent behaviour). Thin on purpose: it opens the store,
rehydrates, drives the behaviour with live effects, and closes the run.

Ray restarts it after a crash (`max_restarts`) and re-sends the interrupted `run` call
(`max_task_retries`); `__init__` rehydrates from snapshot + tail and `drive` continues from
the state the log holds, while idempotency keys stop anything being appended twice.
"""

from __future__ import annotations

from typing import Any

from actors.runtime.budget import close_ledger, open_ledger, run_usage
from actors.runtime.llm.gateway import LlmGateway
from actors.runtime.llm.providers import provider_from_settings
from actors.runtime.perform import LiveEffects, drive, ray_invoker
from actors.runtime.registry import Registry
from actors.runtime.run import Complete, Fail, RunLifecycle, Start, run_stream
from actors.runtime.settings import Settings
from actors.runtime.shell import ActorShell
from actors.runtime.tool_context import ToolContext
from actors.runtime.tool_host import RunTools
from actors.runtime.wire import from_wire
from events.errors import ErrorInfo
from events.store import EventStore


def agent_stream(run_id: str) -> str:
    return f"agent:{run_id}"


class AgentActor:
    def __init__(
        self, settings: Settings, run_id: str, agent: str = "react", llm: Any | None = None
    ) -> None:
        self.settings = settings
        self.run_id = run_id
        self.store = EventStore(settings.store_url)
        behaviour = Registry.agent_class(agent)()
        self.shell = ActorShell(
            behaviour,
            agent_stream(run_id),
            self.store,
            run_id=run_id,
            snapshot_every=settings.snapshot_every,
        ).load()
        self.run = ActorShell(RunLifecycle(), run_stream(run_id), self.store, run_id=run_id).load()
        self.llm = llm  # a given provider (tests) also serves the tools' own calls
        self.gateway = LlmGateway(llm if llm is not None else provider_from_settings(settings))
        # The run's budget, drawn on by every call of the run (the tools' too), as the log left it.
        self.ledger = open_ledger(self.store, run_id, shared=True, streams=self.call_streams())
        self.tools = RunTools(run_id, settings, llm, self.ledger)

    def serve(self, start: Any) -> dict[str, Any]:
        """Run the agent to the end and close the run; returns a summary. `start` is the start
        command, or its wire form (`Client.spawn` sends that)."""
        start = from_wire(start)
        self.shell.handle(start, causation_id=self.run.last_event_id)  # caused by RunSubmitted
        self.run.handle(
            Start(key="start", lead_stream=self.shell.stream_id), causation_id=self.shell.last_event_id
        )
        state = self.shell.state
        if state.status == "running" and getattr(state, "tools", None):
            self.tools.prestart([(t.name, t.topic) for t in state.tools], root=state.root)
        try:
            invoke = ray_invoker(self.call_tool, timeout_s=self.settings.llm_timeout_s)
            state = drive(self.shell, LiveEffects(self.gateway, invoke, self.ledger))
        except Exception as e:
            error = ErrorInfo(type="runtime_error", reason=type(e).__name__, message=str(e)[:500])
            self.run.handle(Fail(key="finish", error=error), causation_id=self.shell.last_event_id)
            self._finish()
            raise
        # The run's totals are its log's (the lead's calls and its tools' own): what the audit view counts.
        used = run_usage(self.store, self.run_id, self.call_streams())
        if state.status == "completed":
            self.run.handle(
                Complete(key="finish", result=state.answer, llm_calls=used.calls, tokens=used.tokens),
                causation_id=self.shell.last_event_id,
            )
        else:
            self.run.handle(Fail(key="finish", error=state.error), causation_id=self.shell.last_event_id)
        self._finish()
        return {
            "run_id": self.run_id,
            "status": state.status,
            "answer": state.answer,
            "error": state.error.model_dump() if state.error else None,
            "llm_calls": used.calls,
            "tokens": used.tokens,
            "replayed_on_load": self.shell.replayed_on_load,
        }

    def call_streams(self) -> list[str]:
        """The streams that hold the run's LLM calls: the lead's, and each of its tools' own."""
        tools = getattr(self.shell.state, "tools", [])
        return [self.shell.stream_id, *(ToolContext(run_id=self.run_id, tool=t.name).stream_id for t in tools)]

    def _finish(self) -> None:
        """The run is over: snapshot, and let go of what it held. Its tool actors are stopped and
        its store connections closed (a finished run's actor stays, for `state()`, which reads
        memory only; left open, each finished run kept its connections, ~5 on PostgreSQL)."""
        self._snapshot()
        close_ledger(self.ledger)
        self._release()

    def _release(self) -> None:
        self.tools.stop()
        self.store.close()

    def _snapshot(self) -> None:
        """Snapshot both actors as they finish, so their final states are indexed views."""
        self.shell.snapshot()
        self.run.snapshot()

    def state(self) -> dict[str, Any]:
        return {"version": self.shell.version, "state": self.shell.state.model_dump(mode="json")}

    def call_tool(self, name: str, args: dict[str, Any]) -> Any:
        """Send a call to one of the run's tools, in the run's current root (a researcher only
        knows it once the repository is cloned); its Ray object ref."""
        state = self.shell.state
        spec = next((t for t in getattr(state, "tools", []) if t.name == name), None)
        if spec is None:
            raise KeyError(f"tool {name!r} is not one of this run's tools")
        return self.tools.call(spec.name, args, root=state.root, topic=spec.topic)
