"""What a user writes agents and tools with, in one import:

    from actors.sdk import Client, agent, tool

(`agent` cannot be `from actors import agent`: `actors.agent` is the ReAct agent's package,
and once it is imported, the attribute is that package.)"""

from __future__ import annotations

from actors.runtime.client import Client, RunHandle, RunResult
from actors.runtime.durable import Context, NonDeterminismError, ToolError, agent
from actors.runtime.function_tool import Workspace, tool

__all__ = ["Client", "Context", "NonDeterminismError", "RunHandle", "RunResult", "ToolError", "Workspace", "agent", "tool"]
