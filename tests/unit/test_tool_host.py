"""A run's tools in one actor (actors.runtime.tool_host): the host's own logic, without Ray."""

from __future__ import annotations

import pytest

from actors.runtime.registry import Tool
from actors.runtime.tool_host import ToolHost


class Counter(Tool):
    made = 0

    def __init__(self, **config: object) -> None:
        super().__init__(**config)
        type(self).made += 1
        self.calls = 0

    def execute(self, text: str) -> str:
        self.calls += 1
        return f"{self.config['root']} {text} {self.calls}"


class Other(Counter):
    made = 0


class Broken(Tool):
    def execute(self) -> str:
        raise ValueError("no such file")


def test_each_tool_is_made_once_in_the_hosts_folder_and_kept():
    host = ToolHost("/work/x")
    assert host.execute(Counter, {"text": "a"}) == "/work/x a 1"
    assert host.execute(Other, {"text": "b"}) == "/work/x b 1"
    assert host.execute(Counter, {"text": "c"}) == "/work/x c 2"
    assert (Counter.made, Other.made) == (1, 1)


def test_a_tools_failure_reaches_the_caller_and_the_host_serves_on():
    host = ToolHost(".")
    with pytest.raises(ValueError, match="no such file"):
        host.execute(Broken, {})
    assert host.execute(Other, {"text": "next"}) == ". next 1"
