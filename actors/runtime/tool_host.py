"""Where a run's tools run: Ray actors, one per folder and placement, not one per tool.

Each Ray actor is a Python worker of its own, and starting one costs 0.8-1.4 s on 2 cores
(Ray keeps no idle workers across jobs, and each `chorus` command is a job). When every
distinct tool a run called was an actor of its own, an agent that listed files, read one and
searched paid that three times (the `make demo` question: ~2 s of a ~5 s overhead). So the
tools a run calls in one folder (`root`) and placed alike (`CHORUS_PLACEMENT` rules of role
`tool:NAME`) share one actor, `ToolHost`, which makes each tool on its first call and keeps
it. A call runs in the host as it ran in the tool's own actor: one at a time, restarted after
a crash (Ray re-runs `__init__`; the tools are made again on their next call).

A tool that makes calls of its own (`uses_context`: it draws on the run's budget through a
`ToolContext`) keeps an actor of its own, created as before.

`RunTools` is what a run's actor holds: it gives each call to the right actor and stops them
all when the run ends. An agent that has tools starts its host as it starts (`prestart`), so
the worker starts during the first model call rather than after it.
"""

from __future__ import annotations

import json
from typing import Any

from actors.runtime.actor_options import restartable
from actors.runtime.budget import share_ledger
from actors.runtime.placement import ray_options
from actors.runtime.registry import Registry
from actors.runtime.settings import Settings
from actors.runtime.tool_context import ToolContext


class ToolHost:
    """A Ray actor serving the tools of one run in one folder; each tool is made on its first
    call (`tool_class(root=root)`) and kept for the next ones. The class comes with each call,
    as the calling actor resolved it (as Ray sent it to a tool's own actor before): a tool
    defined in a user's script resolves there, not necessarily by name in a new worker."""

    def __init__(self, root: str) -> None:
        self.root = root
        self._tools: dict[type, Any] = {}

    def execute(self, tool_class: type, args: dict[str, Any]) -> Any:
        tool = self._tools.get(tool_class)
        if tool is None:
            tool = self._tools[tool_class] = tool_class(root=self.root)
        return tool.execute(**args)


class RunTools:
    """The tool actors of one run, made on first use: `call(name, args, root=..., topic=...)`
    returns the Ray object ref of the call; `stop()` kills them all."""

    def __init__(self, run_id: str, settings: Settings, provider: Any | None, ledger: Any) -> None:
        self.run_id = run_id
        self.settings = settings
        self.provider = provider  # a given provider (tests) also serves the tools' own calls
        self.ledger = ledger
        self._hosts: dict[tuple[str, str], Any] = {}  # (root, placement options) -> ToolHost
        self._own: dict[tuple[str, str, str], Any] = {}  # (name, topic, root) -> a context tool's actor

    def call(self, name: str, args: dict[str, Any], *, root: str, topic: str = "") -> Any:
        tool_class = Registry.tool_class(name, topic)
        if getattr(tool_class, "uses_context", False):
            return self._own_actor(name, topic, root).execute.remote(**args)
        return self._host(name, root).execute.remote(tool_class, args)

    def prestart(self, names: list[tuple[str, str]], *, root: str) -> None:
        """Start the host the first of these (name, topic) tools would be served by, without
        waiting for it: its worker starts while the run's first model call runs, instead of
        after it (a tool's first call cost ~1.1 s of a `chorus run` on the local model)."""
        for name, topic in names:
            if not getattr(Registry.tool_class(name, topic), "uses_context", False):
                self._host(name, root)
                return

    def _host(self, name: str, root: str) -> Any:
        import ray  # lazily: the module is imported by actors that replay without Ray

        options = ray_options(self.settings.placement, f"tool:{name}")
        key = (root, json.dumps(options, sort_keys=True, default=repr))
        if key not in self._hosts:
            self._hosts[key] = ray.remote(ToolHost).options(**restartable(**options)).remote(root)
        return self._hosts[key]

    def _own_actor(self, name: str, topic: str, root: str) -> Any:
        key = (name, topic, root)
        if key not in self._own:
            context = ToolContext(
                run_id=self.run_id, tool=name, store_url=self.settings.store_url, settings=self.settings,
                provider=self.provider,
                ledger=share_ledger(self.ledger),  # the run's ledger actor, started for the first such tool
            )  # fmt: skip
            self._own[key] = Registry.get_tool(
                name, topic, placement=self.settings.placement, root=root, context=context
            )
        return self._own[key]

    def __len__(self) -> int:
        """How many tool actors the run holds now (0 once it has stopped them)."""
        return len(self._hosts) + len(self._own)

    def stop(self) -> None:
        import ray  # the run's actor runs on Ray

        for handle in [*self._hosts.values(), *self._own.values()]:
            try:
                ray.kill(handle, no_restart=True)
            except Exception:  # already gone
                pass
        self._hosts.clear()
        self._own.clear()
