"""Code-question runs (seed 003) as the runtime sees them: an agent run led by the
`Orchestrator`, with the `chorus ask` verb."""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import ClassVar

import actors.codeqa.orchestrator  # noqa: F401  (registers the orchestrator agent)
import actors.codeqa.tools  # noqa: F401  (registers seed 003's five repository tools)
from actors.agent.kind import AgentRunKind
from actors.codeqa import cli
from actors.runtime.registry import Registry
from actors.runtime.runkind import FrontDoor


class CodeQuestionCommands(FrontDoor):
    """`chorus ask`."""

    def add_commands(self, subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
        cli.add_parsers(subparsers)


@Registry.register_run_kind
class CodeQuestionRun(AgentRunKind):
    name = cli.ORCHESTRATOR
    wording = replace(AgentRunKind.wording, summary="answer a question about the code in a folder of repositories (seed 003)")
    front: ClassVar[type[FrontDoor]] = CodeQuestionCommands
