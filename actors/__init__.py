"""The live system: the runtime (event-sourced actors, registry, LLM gateway, client, CLI)
and one subpackage per workload."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

try:
    __version__ = version("chorus")
except PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0+unknown"

if TYPE_CHECKING:
    from actors.runtime.client import Client, RunHandle, RunResult
    from actors.runtime.durable import Context
    from actors.runtime.function_tool import Workspace, tool


def __getattr__(name: str) -> Any:
    # Lazy, so `import actors.runtime.registry` in a Ray worker does not pull in the client.
    if name in ("Client", "RunHandle", "RunResult"):
        from actors.runtime import client

        return getattr(client, name)
    if name in ("tool", "Workspace"):  # tools as functions (actors.runtime.function_tool)
        from actors.runtime import function_tool

        return getattr(function_tool, name)
    # Agents as plain functions: `from actors.sdk import agent` (`actors.agent` is the ReAct
    # agent's package, which shadows any `agent` attribute here once imported).
    if name == "Context":
        from actors.runtime import durable

        return getattr(durable, name)
    raise AttributeError(name)


__all__ = ["Client", "Context", "RunHandle", "RunResult", "Workspace", "__version__", "tool"]
