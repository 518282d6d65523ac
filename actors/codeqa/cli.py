"""`chorus ask "QUESTION" --root DIR`: seed 003's code-question assistant from the shell.

It submits the question to the orchestrator (`Client().submit(..., kind=ORCHESTRATOR)`),
prints the run id, then each tool call as it happens (on stderr), then the answer without
its `<answer>` tags and the files and line ranges it relied on (on stdout).

Exit status, as for `chorus run`: 0 answered; 1 the run failed (its error is printed);
130 interrupted (Ctrl-C or SIGTERM: the run is cancelled first); 2 bad input or configuration, in one line, with nothing written to the log (a missing or
empty repositories folder, an empty question, an unreachable model endpoint).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, TextIO

from actors.agent.policy import unwrap_answer
from actors.codeqa.answer import relied_on
from actors.codeqa.config import CodeQaConfig
from actors.codeqa.orchestrator import TOOLS
from actors.codeqa.repos import list_repositories
from actors.runtime.cli_dialect import add_root
from actors.runtime.client import Client
from actors.runtime.console import cancel_on_interrupt
from actors.runtime.progress import describe
from actors.runtime.registry import Registry
from events.runs import DEFAULT_MAX_LLM_CALLS, Budget

ORCHESTRATOR = "orchestrator"  # the run kind (actors.codeqa.kind.CodeQuestionRun)


def add_parsers(sub: Any) -> None:
    ask = sub.add_parser("ask", help="answer a question about the code in a folder of repositories")
    ask.add_argument("question", help="the question, in words")
    add_root(ask, "folder holding one or more repositories, each a folder inside it (required)",
             old="--repos", dest="repos", type=Path)  # fmt: skip
    ask.add_argument("--max-iterations", type=int, help="ReAct iterations (default 10, CHORUS_CODEQA_CONFIG)")
    ask.add_argument("--max-llm-calls", type=int, default=DEFAULT_MAX_LLM_CALLS, help="LLM calls the run may make (default %(default)s)")
    ask.add_argument("--max-tokens", type=int, help="tokens the run may use")
    ask.add_argument("--max-seconds", type=float, help="wall-time budget")
    ask.add_argument("--quiet", "-q", action="store_true", help="print only the answer and its sources")
    ask.set_defaults(func=cmd_ask)


class ReposFolderError(ValueError):
    """The repositories folder cannot be asked about (bad input: one line, exit 2)."""


def check_repos(folder: Path) -> Path:
    """The repositories folder, or a one-line error when it cannot be asked about."""
    path = folder.expanduser()
    if not path.exists():
        raise ReposFolderError(f"repositories folder {folder} does not exist")
    if not path.is_dir():
        raise ReposFolderError(f"repositories folder {folder} is not a folder")
    if not list_repositories(path):
        raise ReposFolderError(f"no repositories in {folder}: it holds no folders (each repository is a folder inside it)")
    return path.resolve()


def cmd_ask(args: argparse.Namespace) -> int:
    if args.repos is None:
        raise ValueError("give --root DIR: the folder holding the repositories")
    config = CodeQaConfig.load()  # a bad CHORUS_CODEQA_CONFIG fails here, before the run
    if not args.question.strip():
        raise ValueError("the question is empty")
    repos = check_repos(args.repos)
    budget = Budget(max_llm_calls=args.max_llm_calls, max_tokens=args.max_tokens, max_wall_seconds=args.max_seconds)
    with Client() as client:
        handle = client.submit(
            args.question,
            root=repos,
            kind=ORCHESTRATOR,
            tools=list(TOOLS),
            max_iterations=args.max_iterations if args.max_iterations is not None else config.max_iterations,
            budget=budget,
        )
        print(f"run {handle.run_id}", flush=True)
        return follow_question(handle, quiet=args.quiet)


def follow_question(handle: Any, *, quiet: bool = False, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Show the run's steps as they happen, then the answer and its sources (0) or the
    error (1); interrupted (Ctrl-C, SIGTERM), the run is cancelled (130)."""

    return cancel_on_interrupt(handle, lambda: _follow_question(handle, quiet, out, err), err)


def _follow_question(handle: Any, quiet: bool, out: TextIO | None, err: TextIO | None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    kind = Registry.run_kind(ORCHESTRATOR)
    events = []
    for rec in handle.events():
        events.append(rec.event)
        if not quiet:
            line = describe(rec.event, kind=kind)
            if line:
                print(line, file=err, flush=True)
    result = handle.wait()
    if not result.ok:
        error = result.error.line() if result.error else result.status
        print(f"chorus: run {handle.run_id} failed: {error}", file=err)
        return 1
    answer = unwrap_answer(result.answer or "")
    print(answer, file=out)
    sources = relied_on(events, answer)
    print("", file=out)
    if sources:
        print("Relied on:", file=out)
        for source in sources:
            print(f"  {source.line()}", file=out)
    else:
        print("Relied on: no file was read", file=out)
    out.flush()
    return 0
