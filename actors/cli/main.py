"""The `chorus` command: the front door. It holds the verbs every run has and asks the
registry for the rest: each workload's `RunKind` adds its own (`chorus run`, `research`,
`ask`, `task`, `eval`, ...), so a new workload needs no edit here.

    chorus runs                          list runs, newest first
    chorus events RUN_ID [--json]        a run's events in global order
    chorus log / state / replay / fork / diff / export
    chorus resume RUN_ID                 serve a run whose process died again, from its log
    chorus projections / snapshot / audit
    chorus model [serve | stop]          assemble / check the local model; keep its server up

Exit status: 0 on success; 1 when a run fails; 2 for bad input or configuration
(one line on stderr, nothing written to the log).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import actors
from actors.cli import serve, signals, views
from actors.cli.paths import writable_file
from actors.runtime.cli_dialect import add_json, add_out, print_json, run_arg
from actors.runtime.client import DEFAULT_LLM_PARAMS, Client
from actors.runtime.console import (
    event_json,
    follow_run,
    is_user_error,
    one_line,
    open_store,
)
from actors.runtime.errors import UserError
from actors.runtime.llm.local_model import ensure_model
from actors.runtime.llm.local_server import LocalLlamaServer, stop_detached
from actors.runtime.progress import describe
from actors.runtime.registry import Registry
from actors.runtime.replay import (
    ReplayReport,
    RunDiff,
    diff_runs,
    export_run,
    load_fixture,
    replay_run,
    run_kind_of,
    state_at,
    timeline,
)
from actors.runtime.settings import Settings
from events.base import Event
from projections.runs import status_label

__all__ = ["UserError", "main"]

# A path a person gave (or CHORUS_DATA_DIR) that is a file, a folder or not theirs: one line.
PATH_ERRORS = (NotADirectoryError, IsADirectoryError, PermissionError)


def main(argv: Sequence[str] | None = None) -> int:
    if os.getcwd() not in sys.path:
        # A tool or agent of one's own named by import path (`--tools mymodule:f`, a run's
        # recorded agent on replay or fork) is found in the working folder, as `python -m`
        # finds it; a local Ray's workers get the driver's working folder on their path too.
        sys.path.insert(0, os.getcwd())
    return dispatch(_parser(), argv)


def dispatch(parser: argparse.ArgumentParser, argv: Sequence[str] | None = None) -> int:
    """Parse `argv` and run the command's `func`; a user's mistake is one line on stderr and
    exit 2. A command line of its own built on this one (`python -m evals`) runs through here
    too."""
    name = getattr(parser, "command", parser.prog)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print(f"{name}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `chorus events RUN | head`: the reader has had enough
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as e:  # noqa: BLE001 - the one place exceptions become one line
        if not (is_user_error(e) or isinstance(e, PATH_ERRORS)):
            raise
        print(f"{name}: error: {one_line(e)}", file=sys.stderr)
        return 2


class OneLineParser(argparse.ArgumentParser):
    """argparse, with its errors as one line (`chorus: error: ...`) and exit 2 like every
    other bad input; the usage is one `--help` away. Sub-commands inherit the class."""

    command = "chorus"  # what the one line starts with

    def error(self, message: str) -> NoReturn:
        print(f"{self.command}: error: {self.prog}: {message} (see {self.prog} --help)", file=sys.stderr)
        sys.exit(2)


def _parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="chorus", description="Chorus: event-sourced LLM agents on Ray.")
    p.add_argument("--version", action="version", version=f"chorus {actors.__version__}")
    sub = p.add_subparsers(metavar="COMMAND")
    kinds = sorted(Registry.run_kinds(), key=lambda k: (not k.default, k.name))
    for kind in kinds[:1]:
        kind.front.add_commands(sub)  # the default kind's verb (`chorus run`) first

    runs = sub.add_parser("runs", help="list runs, newest first")
    runs.add_argument("--limit", type=int, default=20, metavar="N", help="at most N runs (default 20)")
    add_json(runs, "one run per line")
    runs.set_defaults(func=cmd_runs)

    ev = sub.add_parser("events", help="print a run's events in global order")
    run_arg(ev)
    add_json(ev, "one event per line (the event shape of docs/reference.md)")
    ev.set_defaults(func=cmd_events)

    log = sub.add_parser("log", help="a readable timeline of a run across its actors")
    run_arg(log)
    add_json(log, "the run's events, one per line, as `chorus events --json`")
    log.set_defaults(func=cmd_log)

    state = sub.add_parser("state", help="an actor's state at its latest or a chosen version")
    state.add_argument("stream_id", metavar="STREAM", help="the actor's stream, e.g. agent:RUN or run:RUN")
    state.add_argument("--at", type=int, metavar="VERSION", help="the stream version (default: the latest)")
    add_json(state, "on one line (the output is JSON either way)")
    state.set_defaults(func=cmd_state)

    replay = sub.add_parser("replay", help="re-execute a run from its log; no model, no tools")
    run_arg(replay, nargs="?", help="the run to replay (or --fixture FILE)")
    replay.add_argument("--fixture", type=Path, metavar="FILE", help="replay a recorded run file instead")
    add_json(replay, "the verdict as one object")
    replay.set_defaults(func=cmd_replay)

    fork = sub.add_parser("fork", help="a new run from a run's state at a position, continued live")
    run_arg(fork, help="the run to fork")
    fork.add_argument("--at", type=int, required=True, metavar="POSITION",
                      help="the global log position to fork at (a simulation session: a cycle; a relay: a builder turn)")
    fork.add_argument("--model", help="continue with another model")
    fork.add_argument("--temperature", type=float, help="continue with another temperature")
    edit = fork.add_mutually_exclusive_group()
    edit.add_argument("--completion", type=Path, metavar="FILE",
                      help="an agent run: continue from the LLM call at --at with its completion replaced by FILE's text")
    edit.add_argument("--prompt", type=Path, metavar="FILE",
                      help="an agent run: send the LLM call at --at FILE's prompt instead, live (a JSON list of "
                           "{role, content} messages, or a text that replaces the last user message)")
    fork.add_argument("--quiet", "-q", action="store_true", help="print only the answer")
    fork.set_defaults(func=cmd_fork)

    resume = sub.add_parser("resume", help="serve a run whose process died again; it goes on from its log")
    run_arg(resume, help="the run to serve again")
    resume.add_argument("--quiet", "-q", action="store_true", help="print only the answer")
    resume.set_defaults(func=cmd_resume)

    diff = sub.add_parser("diff", help="where two runs (e.g. a run and its fork) first differ")
    diff.add_argument("run_a", metavar="RUN_A", help="one run")
    diff.add_argument("run_b", metavar="RUN_B", help="the other (e.g. its fork)")
    add_json(diff, "the comparison as one object")
    diff.set_defaults(func=cmd_diff)

    export = sub.add_parser("export", help="write a run's events as JSON lines (a replay fixture)")
    run_arg(export, help="the run to export")
    add_out(export, "the file to write (its folder must exist)", required=True)
    export.set_defaults(func=cmd_export)

    model = sub.add_parser(
        "model",
        help="assemble and verify the local model; print its path",
        description="Without an action: assemble and verify the local model and print its path. "
        "`serve` starts the embedded LLM server and leaves it running until `stop` (by default "
        "`chorus` processes share one that stops after CHORUS_LLM_IDLE_S with no request, as they "
        "share one local Ray that stops after CHORUS_RAY_IDLE_S unused); `stop` stops it, either way.",
    )
    model.add_argument("action", nargs="?", choices=("serve", "stop"),
                       help="serve: keep the LLM server up between runs; stop: stop it (default: check the model)")
    add_json(model, "the model's name and path, or the server's address")
    model.set_defaults(func=cmd_model)

    for kind in kinds[1:]:
        kind.front.add_commands(sub)
    moved = sub.add_parser(
        "eval",
        help="moved: the measurements (retrieval, the relay on HumanEval) are `python -m evals` in a checkout",
        description="The measurements left the product: from a Chorus checkout, run "
        "`.venv/bin/python -m evals retrieval ...` or `.venv/bin/python -m evals relay ...`.",
    )
    moved.add_argument("rest", nargs=argparse.REMAINDER, metavar="...", help="what to measure, as before")
    moved.set_defaults(func=cmd_eval_moved)
    views.add_parsers(sub)
    serve.add_parser(sub)
    signals.add_parser(sub)  # agent functions that wait for a person
    return p


# -- commands ---------------------------------------------------------------------------------


def cmd_eval_moved(args: argparse.Namespace) -> int:
    what = shlex.join(args.rest) if args.rest else "retrieval|relay ..."
    raise UserError(f"`chorus eval` moved out of the product: from a Chorus checkout run `.venv/bin/python -m evals {what}`")


def cmd_runs(args: argparse.Namespace) -> int:
    if args.limit < 1:
        raise UserError(f"--limit must be at least 1, not {args.limit}")
    with Client(start_ray=False) as client:
        rows = client.runs(limit=args.limit)
    if args.json:
        for r in rows:
            print_json(r)
        return 0
    if not rows:
        print("no runs yet")
        return 0
    width = max(len(r["run_id"]) for r in rows)
    print(f"{'RUN':<{width}}  {'SUBMITTED':<19}  {'STATUS':<9}  {'KIND':<12}  GOAL")
    for r in rows:
        r = {**r, "run_id": r["run_id"].ljust(width)}  # the RUN column, as wide as the header says
        when = r["submitted_at"].strftime("%Y-%m-%d %H:%M:%S")
        goal = r["goal"] if len(r["goal"]) <= 60 else r["goal"][:57] + "..."
        fork = f"  (fork of {r['forked_from']})" if r["forked_from"] else ""
        print(f"{r['run_id']}  {when}  {status_label(r):<9}  {r['kind']:<12}  {goal}{fork}")
    return 0


def cmd_events(args: argparse.Namespace) -> int:
    with Client(start_ray=False) as client:
        records = client.events(args.run_id)
        kind = run_kind_of(client.store, args.run_id, records)
    if not args.json:
        print(f"{'POSITION':>8}  TIME      STREAM@VERSION  TYPE  WHAT")
    for rec in records:
        if args.json:
            print_json(event_json(rec))
        else:
            e = rec.event
            line = describe(e, brief=True, kind=kind)
            print(f"{rec.position:>8}  {e.timestamp:%H:%M:%S}  {e.stream_id}@{e.version}  {e.type_name}  {line}")
    return 0


def cmd_log(args: argparse.Namespace) -> int:
    if args.json:
        return cmd_events(args)
    with open_store() as store:
        for line in timeline(store, args.run_id, color=sys.stdout.isatty()):
            print(line)
    return 0


def cmd_state(args: argparse.Namespace) -> int:
    with open_store() as store:
        version, state = state_at(store, args.stream_id, args.at)
    body = {"stream_id": args.stream_id, "version": version, "state": state.model_dump(mode="json")}
    print(json.dumps(body) if args.json else json.dumps(body, indent=2))
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    if args.fixture and args.run_id:
        raise UserError("give a RUN_ID or --fixture FILE, not both")
    if args.fixture:
        store, run_id = load_fixture(args.fixture)
    elif args.run_id:
        store, run_id = open_store(), args.run_id
    else:
        raise UserError("give a RUN_ID or --fixture FILE")
    with store:
        report = replay_run(store, run_id)
    if args.json:
        print_json(_verdict(report))
        return 0 if report.ok else 1
    if report.ok:
        print(
            f"replay of run {run_id}: identical — {report.events} events in {_streams(report.streams)}, "
            f"{report.llm_calls} LLM calls and {report.tool_calls} tool calls served "
            f"from the log, 0 live calls; {report.replay_s:.3f}s against {report.original_s:.1f}s "
            f"originally ({report.speedup:,.0f}x faster)"
        )
        for note in report.notes:
            print(f"  {note}")
        return 0
    print(f"replay of run {run_id} DIVERGED", file=sys.stderr)
    print(report.divergence.describe(), file=sys.stderr)  # type: ignore[union-attr]
    return 1


def _verdict(report: ReplayReport) -> dict[str, object]:
    d = report.divergence
    return {
        "run_id": report.run_id,
        "identical": report.ok,
        "streams": report.streams,
        "events": report.events,
        "llm_calls": report.llm_calls,
        "tool_calls": report.tool_calls,
        "live_calls": 0,
        "replay_s": report.replay_s,
        "original_s": report.original_s,
        "notes": report.notes,
        "divergence": None if d is None else {"stream_id": d.stream_id, "version": d.version, "text": d.describe()},
    }


def _streams(streams: list[str]) -> str:
    """`agent:ab12` → "stream agent:ab12"; more → "3 streams (agent:ab12, ...)"."""
    if len(streams) == 1:
        return f"stream {streams[0]}"
    shown = ", ".join(streams[:3]) + (", ..." if len(streams) > 3 else "")
    return f"{len(streams)} streams ({shown})"


def cmd_fork(args: argparse.Namespace) -> int:
    params = None
    if args.temperature is not None:
        params = {**DEFAULT_LLM_PARAMS, "temperature": args.temperature}
    with Client() as client:
        if args.completion is not None or args.prompt is not None:
            handle = _fork_with_edit(client, args, params)
        else:
            handle = client.fork(args.run_id, args.at, model=args.model, llm_params=params)
        kind = Registry.run_kind(client.run_state(handle.run_id).kind or Registry.default_run_kind().name)
        print(f"run {handle.run_id} (forked from {args.run_id} at {kind.wording.fork_unit} {args.at})", flush=True)
        if not kind.running.live:
            return 0  # it waits for its user (`chorus sim step`)
        return follow_run(handle, args.quiet)


def _fork_with_edit(client: Client, args: argparse.Namespace, params: dict[str, object] | None) -> Any:
    """`chorus fork --completion FILE | --prompt FILE` (actors.agent.fork_edit): the edit is
    recorded as made by the user running the command."""
    import getpass

    from actors.agent.fork_edit import fork_with_edit

    path = args.completion or args.prompt
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        flag = "--completion" if args.completion is not None else "--prompt"
        raise ValueError(f"cannot read {flag} {path}: {getattr(e, 'strerror', None) or e}") from None
    if args.completion is not None:
        return fork_with_edit(client, args.run_id, args.at, completion=text, edited_by=getpass.getuser(), model=args.model, llm_params=params)
    try:
        prompt = json.loads(text)
    except ValueError:
        prompt = text  # not JSON: the text of the last user message
    if not isinstance(prompt, list):
        prompt = text
    return fork_with_edit(client, args.run_id, args.at, prompt=prompt, edited_by=getpass.getuser(), model=args.model, llm_params=params)


def cmd_resume(args: argparse.Namespace) -> int:
    with Client() as client:
        handle = client.resume(args.run_id)  # UnknownRun, ValueError: one line (main)
        print(f"run {args.run_id} resumed", flush=True)
        return follow_run(handle, args.quiet)


def cmd_diff(args: argparse.Namespace) -> int:
    with open_store() as store:
        diff = diff_runs(store, args.run_a, args.run_b)
    if args.json:
        print_json(_diff_json(diff))
        return 0
    for line in diff.lines():
        print(line)
    return 0


def _diff_json(d: RunDiff) -> dict[str, object]:
    def side(run: str, first: Event | None, counts: Counter[str], end: str) -> dict[str, object]:
        differs = None if first is None else {"stream_id": first.stream_id, "version": first.version,
                                              "type": first.type_name, "data": first.payload()}  # fmt: skip
        return {"run_id": run, "first_difference": differs, "counts": dict(counts), "end": end}

    return {
        "kind": d.kind,
        "shared": d.shared,
        "identical": d.first_a is None and d.first_b is None,
        "a": side(d.run_a, d.first_a, d.counts_a, d.end_a),
        "b": side(d.run_b, d.first_b, d.counts_b, d.end_b),
        "details": d.details,
    }


def cmd_export(args: argparse.Namespace) -> int:
    writable_file(args.out)  # before opening the store: bad input writes nothing
    with open_store() as store:
        n = export_run(store, args.run_id, args.out)
    print(f"wrote {n} events of run {args.run_id} to {args.out}")
    return 0


def cmd_model(args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    if args.action == "stop":
        said = stop_detached(settings)
        print_json({"stopped": said}) if args.json else print(said)
        return 0
    if args.action == "serve":
        server = LocalLlamaServer(settings, detached=True).start()
        if args.json:
            print_json({"model": settings.llm_model, "base_url": server.base_url, "reused": server.reused})
        elif server.reused:
            print(f"already running: {server.base_url}")
        else:
            print(f"serving {settings.llm_model} on {server.base_url} until `chorus model stop`")
        return 0
    path = ensure_model(settings)
    print_json({"model": settings.llm_model, "path": str(path)}) if args.json else print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
