"""`chorus task`: run seed 001 workflows from the command line, or talk to them in a REPL.

    chorus task '(let ((s (call summarize-file :path "README.md"))) (if (ok? s) s (system:run_script "ls")))'
    chorus task summarize-file --param path=README.md       # one atomic task (or direct tool)
    chorus task --file flow.sexp --param goal="..."         # a workflow kept in a file
    chorus task --templates DIR ...                         # your own XML task templates too
    chorus task ... --root DIR                              # the workspace (default: .)
    chorus task --repl                                      # /task ... commands and plain questions

Prints `run <id>`, then each step on stderr as it happens, then the TaskResult on stdout.
Exit status: 0 COMPLETE, 1 FAILED, 2 bad input (one line; nothing written to the log),
130 interrupted (Ctrl-C or SIGTERM: the run is cancelled first, and the REPL ends).

A workflow's tool calls are at-least-once: a call cut off by a crash runs again when the
actor resumes. `--at-most-once` reports such a call as FAILED (`interrupted`) instead.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
from pathlib import Path
from typing import Any, TextIO

from actors.runtime.cli_dialect import add_root
from actors.runtime.client import Client
from actors.runtime.console import (
    CANCELLED,
    cancel_on_interrupt,
    is_user_error,
    one_line,
)
from actors.runtime.errors import UserError
from actors.tasks.client import result_of, submit_task
from actors.tasks.journal import AT_MOST_ONCE
from actors.tasks.progress import describe
from actors.tasks.result import TaskResult
from actors.tasks.sexp.parser import ParseError, parse_program

HISTORY_KEPT = 20  # messages of conversation a passthrough question carries
_INT = re.compile(r"-?[0-9]+\Z")
_FLOAT = re.compile(r"-?[0-9]+\.[0-9]+\Z")


def add_parsers(sub: Any) -> None:
    p = sub.add_parser("task", help="run a task workflow: an S-expression, a task or tool name, or --repl")
    p.add_argument("text", nargs="?", help="an S-expression '(...)', an atomic task / direct tool name, or a plain request "
                   "matched to the best task template")
    p.add_argument("--param", "-p", action="append", default=[], metavar="KEY=VALUE",
                   help="a parameter of the task or tool; in an S-expression, a variable")  # fmt: skip
    p.add_argument("--file", "-f", type=Path, metavar="FILE", help="read the S-expression from this file")
    p.add_argument("--templates", action="append", default=[], metavar="DIR", help="load *.xml task templates from DIR")
    add_root(p, "folder scripts run in and files are read from (default: .)", old="--workspace", dest="workspace", default=".")
    p.add_argument("--index", metavar="auto|FILE.json", help="memory index: built from the workspace, or path -> description")
    p.add_argument("--max-steps", type=int, help="evaluation steps allowed (default 10000)")
    p.add_argument("--max-depth", type=int, help="nesting allowed, i.e. recursion (default 120)")
    p.add_argument("--max-seconds", type=int, help="wall time the workflow may take, in seconds (default 600)")
    p.add_argument("--max-tool-seconds", type=int, help="a tool call's timeout (default 120; scripts: :timeout)")
    p.add_argument("--at-most-once", action="store_true",
                   help="a tool call cut off by a crash is reported FAILED (interrupted), not run again")  # fmt: skip
    p.add_argument("--repl", action="store_true", help="interactive: /task commands and plain questions")
    p.add_argument("--json", action="store_true", help="print the TaskResult as JSON")
    p.add_argument("--quiet", "-q", action="store_true", help="print only the result")
    p.set_defaults(func=cmd_task)


def cmd_task(args: argparse.Namespace) -> int:
    if args.repl:
        if args.text or args.file:
            raise UserError("--repl takes no workflow; type /task ... inside it")
        with Client() as client:
            return repl(client, _options(args), sys.stdin, sys.stdout, quiet=args.quiet)
    text = _text(args)
    options = _options(args)
    options["params"] = parse_params(args.param)
    with Client() as client:
        return run_and_print(client, text, options, quiet=args.quiet, as_json=args.json)


def _text(args: argparse.Namespace) -> str:
    if args.file and args.text:
        raise UserError("give a workflow or --file, not both")
    if args.file:
        try:
            return args.file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise UserError(f"cannot read {args.file}: {e}") from None
    if not args.text:
        raise UserError("give an S-expression, a task or tool name, --file FILE, or --repl")
    return args.text


def _options(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "template_dirs": list(args.templates),
        "workspace": args.workspace,
        "index": args.index,
        "limits": {
            "max_steps": args.max_steps,
            "max_depth": args.max_depth,
            "max_seconds": args.max_seconds,
            "max_tool_seconds": args.max_tool_seconds,
            AT_MOST_ONCE: 1 if args.at_most_once else None,
        },
    }


def parse_params(pairs: list[str]) -> dict[str, Any]:
    """KEY=VALUE pairs; integers, decimals and true/false become numbers and booleans."""

    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UserError(f"--param takes KEY=VALUE, not {pair!r}")
        out[key.strip()] = typed(value)
    return out


def typed(value: str) -> Any:
    if _INT.match(value):
        return int(value)
    if _FLOAT.match(value):
        return float(value)
    return {"true": True, "false": False}.get(value, value)


def run_and_print(
    client: Any, text: str, options: dict[str, Any], *, quiet: bool = False, as_json: bool = False,
    out: TextIO | None = None, err: TextIO | None = None,
) -> int:  # fmt: skip
    return follow_task(client, text, options, quiet=quiet, as_json=as_json, out=out, err=err)[0]


def follow_task(
    client: Any, text: str, options: dict[str, Any], *, quiet: bool = False, as_json: bool = False,
    out: TextIO | None = None, err: TextIO | None = None,
) -> tuple[int, TaskResult]:  # fmt: skip
    """Submit, show each step as it happens, print the result; (exit status, result).
    Interrupted (Ctrl-C, SIGTERM), the run is cancelled and the status is 130."""

    out, err = out or sys.stdout, err or sys.stderr
    handle = submit_task(client, text, **options)
    print(f"run {handle.run_id}", file=out, flush=True)

    def follow() -> int:
        for rec in handle.events():
            if not quiet:
                line = describe(rec.event)
                if line:
                    print(line, file=err, flush=True)
        handle.wait()
        result = result_of(client, handle)
        print(format_result(result, as_json), file=out, flush=True)
        if result.status == "FAILED":
            error = result.error.line() if result.error else "FAILED"
            print(f"chorus: run {handle.run_id} failed: {error}", file=err, flush=True)
            return 1
        return 0

    status = cancel_on_interrupt(handle, follow, err)
    return status, result_of(client, handle)


def format_result(result: TaskResult, as_json: bool = False) -> str:
    if as_json:
        return json.dumps(result.model_dump(mode="json"), ensure_ascii=False, indent=2, default=str)
    content = result.content if isinstance(result.content, str) else json.dumps(result.content, ensure_ascii=False, indent=2, default=str)
    content = content.rstrip("\n")
    lines = [f"status:  {result.status}"]
    lines.append("content:" + ("\n" + content if "\n" in content else " " + content))
    if result.notes:
        lines.append("notes:   " + json.dumps(result.notes, ensure_ascii=False, default=str))
    return "\n".join(lines)


# -- the REPL ------------------------------------------------------------------------------------

REPL_HELP = """\
/task (S-EXPRESSION)          run a workflow, e.g. /task (call summarize-file :path "README.md")
/task NAME key=value ...      run one atomic task or direct tool (or --param key=value)
/history  /clear              show or forget the conversation
/help  /exit                  this text; leave
anything else                 a question, answered from the workspace files with the conversation so far"""


def repl(client: Any, options: dict[str, Any], stdin: TextIO, stdout: TextIO, *, quiet: bool = False) -> int:
    """Seed 001 flow 1 (passthrough questions, with history) and flow 2 (/task commands).
    A bad command prints one line and the session goes on; the exit status is 0."""

    interactive = stdin.isatty()
    history: list[dict[str, Any]] = []
    print("chorus task REPL — /help for commands, /exit to leave", file=sys.stderr)
    while True:
        line = _read_entry(stdin, stdout, interactive)
        if line is None or line in ("/exit", "/quit"):
            return 0
        if not line:
            continue
        try:
            if line == "/help":
                print(REPL_HELP, file=stdout)
            elif line == "/history":
                for m in history:
                    print(f"{m['role']}: {m['content']}", file=stdout)
            elif line == "/clear":
                history.clear()
            elif line == "/task" or line.startswith("/task "):
                text, params = parse_task_command(line[len("/task"):].strip())
                if run_and_print(client, text, {**options, "params": params}, quiet=quiet, out=stdout) == CANCELLED:
                    return CANCELLED
            elif line.startswith("/"):
                print(f"error: unknown command {line.split()[0]} (try /help)", file=stdout)
            else:
                status, result = follow_task(
                    client, line, {**options, "kind": "query", "history": list(history)}, quiet=quiet, out=stdout
                )
                if status == CANCELLED:
                    return CANCELLED
                if result.ok:
                    history.extend([{"role": "user", "content": line}, {"role": "assistant", "content": result.text()}])
                    del history[:-HISTORY_KEPT]
        except Exception as e:  # noqa: BLE001 - one line per bad command; the session goes on
            if not is_user_error(e):
                raise
            print(f"error: {one_line(e)}", file=stdout, flush=True)


def _read_entry(stdin: TextIO, stdout: TextIO, interactive: bool) -> str | None:
    """One command; a workflow with open parentheses continues on the next lines."""

    text = ""
    while True:
        if interactive:
            print("task> " if not text else "....> ", end="", file=stdout, flush=True)
        raw = stdin.readline()
        if not raw:
            return text.strip() or None
        text += raw
        body = text.strip()
        start = body[len("/task"):].strip() if body.startswith("/task") else ""
        if not start.startswith("("):
            return body
        try:
            parse_program(start)
        except ParseError as e:
            if "never closed" in e.reason:
                continue
        return body


def parse_task_command(rest: str) -> tuple[str, dict[str, Any]]:
    """`(sexp ...)` as it is, or `NAME key=value ...`; a parameter may also be given as
    `--param key=value` (or `-p`, `--param=key=value`), before or after the name, and
    before an S-expression."""

    pairs: list[str] = []
    name: str | None = None
    lexer = shlex.shlex(rest, posix=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        while True:
            ahead = rest[lexer.instream.tell():].lstrip()  # type: ignore[attr-defined]
            if name is None and ahead.startswith(("(", ";", "'")):
                return ahead, parse_params(pairs)
            word = lexer.get_token()
            if word is None:
                break
            if word in ("--param", "-p"):
                value = lexer.get_token()
                if value is None:
                    raise UserError(f"/task: {word} needs KEY=VALUE")
                pairs.append(value)
            elif word.startswith("--param="):
                pairs.append(word[len("--param="):])
            elif word.startswith("-"):
                raise UserError(f"/task: unknown option {word} (parameters are KEY=VALUE or --param KEY=VALUE)")
            elif name is None and "=" not in word:
                name = word
            elif "=" in word:
                pairs.append(word)
            else:
                raise UserError(f"/task runs one task, not {name!r} and {word!r}: parameters are KEY=VALUE")
    except ValueError as e:
        raise UserError(f"/task: {e}") from None
    if name is None:
        raise UserError("/task needs an S-expression or a task name")
    return name, parse_params(pairs)
