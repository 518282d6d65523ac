"""Two tools that say which process served them, and a scripted model that calls each twice:
what shows where a run's tools run (actors.runtime.tool_host)."""

from __future__ import annotations

import json
import os

from actors.runtime.registry import Registry, Tool


@Registry.register_tool("pid_a")
class PidA(Tool):
    description = "Say which process serves this tool."

    def __init__(self, **config: object) -> None:
        super().__init__(**config)
        self.calls = 0

    def execute(self, text: str) -> str:
        self.calls += 1  # kept between calls: the tool is made once per actor
        return f"a {os.getpid()} {self.calls}"


@Registry.register_tool("pid_b")
class PidB(PidA):
    def execute(self, text: str) -> str:
        self.calls += 1
        return f"b {os.getpid()} {self.calls}"


class CallsEachTwice:
    """A scripted model (its copy in the agent's actor counts the calls): pid_a, pid_b, pid_a,
    pid_b, then the answer."""

    def __init__(self) -> None:
        self.step = 0

    def __call__(self, request: object) -> str:
        self.step += 1
        if self.step <= 4:
            action = "pid_a" if self.step % 2 else "pid_b"
            return json.dumps({"thought": "which process?", "action": action, "args": {"text": f"step {self.step}"}})
        return json.dumps({"thought": "done", "action": "answer", "args": {"answer": "seen"}})
