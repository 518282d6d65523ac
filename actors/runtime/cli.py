"""The `chorus` command.

    chorus run "GOAL" [--root PATH]     run a goal; prints the run id, each step, the answer
    chorus runs                          list runs
    chorus events RUN_ID [--json]        a run's events in global order
    chorus model                         assemble / check the local model

Exit status: 0 on success; 1 when a run fails; 2 for bad input or configuration
(one line on stderr, nothing written to the log).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from actors.runtime.progress import describe
from events.store import Recorded


class UserError(Exception):
    """Bad input or configuration: one line, exit 2."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("chorus: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # noqa: BLE001 - the one place exceptions become one line
        if not _is_user_error(e):
            raise
        print(f"chorus: error: {_one_line(e)}", file=sys.stderr)
        return 2


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="chorus", description="Chorus: event-sourced LLM agents on Ray.")
    sub = p.add_subparsers(metavar="COMMAND")

    run = sub.add_parser("run", help="run a goal end to end and print the answer")
    run.add_argument("goal")
    run.add_argument("--root", default=".", help="folder the agent's file tools may read (default: .)")
    run.add_argument("--max-iterations", type=int, default=10)
    run.add_argument("--max-llm-calls", type=int)
    run.add_argument("--max-tokens", type=int)
    run.add_argument("--max-seconds", type=float, help="wall-time budget")
    run.add_argument("--quiet", "-q", action="store_true", help="print only the answer")
    run.set_defaults(func=cmd_run)

    runs = sub.add_parser("runs", help="list runs, newest first")
    runs.add_argument("--limit", type=int, default=20)
    runs.add_argument("--json", action="store_true")
    runs.set_defaults(func=cmd_runs)

    ev = sub.add_parser("events", help="print a run's events in global order")
    ev.add_argument("run_id")
    ev.add_argument("--json", action="store_true", help="JSON lines")
    ev.set_defaults(func=cmd_events)

    log = sub.add_parser("log", help="a readable timeline of a run across its actors")
    log.add_argument("run_id")
    log.set_defaults(func=cmd_log)

    state = sub.add_parser("state", help="an actor's state at its latest or a chosen version")
    state.add_argument("stream_id", help="e.g. agent:RUN_ID or run:RUN_ID")
    state.add_argument("--at", type=int, metavar="VERSION")
    state.set_defaults(func=cmd_state)

    replay = sub.add_parser("replay", help="re-execute a run from its log; no model, no tools")
    replay.add_argument("run_id", nargs="?")
    replay.add_argument("--fixture", type=Path, help="replay a recorded run file instead")
    replay.set_defaults(func=cmd_replay)

    fork = sub.add_parser("fork", help="a new run from a run's state at a position, continued live")
    fork.add_argument("run_id")
    fork.add_argument("--at", type=int, required=True, metavar="POSITION")
    fork.add_argument("--model", help="continue with another model")
    fork.add_argument("--temperature", type=float, help="continue with another temperature")
    fork.add_argument("--quiet", "-q", action="store_true")
    fork.set_defaults(func=cmd_fork)

    diff = sub.add_parser("diff", help="where two runs (e.g. a run and its fork) first differ")
    diff.add_argument("run_a")
    diff.add_argument("run_b")
    diff.set_defaults(func=cmd_diff)

    export = sub.add_parser("export", help="write a run's events as JSON lines (a replay fixture)")
    export.add_argument("run_id")
    export.add_argument("--out", type=Path, required=True)
    export.set_defaults(func=cmd_export)

    model = sub.add_parser("model", help="assemble and verify the local model; print its path")
    model.set_defaults(func=cmd_model)
    from actors.codeqa.cli import add_parsers as add_ask
    from actors.index.cli import add_parsers as add_eval
    from actors.research.cli import add_parsers as add_research
    from actors.tasks.cli import add_parsers as add_task
    from projections.cli import add_parsers as add_projections

    add_research(sub)
    add_ask(sub)
    add_task(sub)
    add_eval(sub)
    add_projections(sub)
    return p


# -- commands ---------------------------------------------------------------------------------


def cmd_run(args: argparse.Namespace) -> int:
    from actors.runtime.client import Client
    from events.runs import Budget

    budget = Budget(
        max_llm_calls=args.max_llm_calls, max_tokens=args.max_tokens, max_wall_seconds=args.max_seconds
    )
    with Client() as client:
        handle = client.submit(args.goal, root=args.root, max_iterations=args.max_iterations, budget=budget)
        print(f"run {handle.run_id}", flush=True)
        return _follow(handle, args.quiet)


def _follow(handle: Any, quiet: bool) -> int:
    """Show a run's steps as they happen, then its answer (0) or its error (1)."""
    for rec in handle.events():
        if not quiet:
            line = describe(rec.event)
            if line:
                print(line, file=sys.stderr, flush=True)
    result = handle.wait()
    if result.ok:
        from actors.agent.policy import unwrap_answer

        print(unwrap_answer(result.answer or ""))
        return 0
    error = result.error.line() if result.error else result.status
    print(f"chorus: run {handle.run_id} failed: {error}", file=sys.stderr)
    return 1


def cmd_runs(args: argparse.Namespace) -> int:
    from actors.runtime.client import Client

    with Client(start_ray=False) as client:
        rows = client.runs(limit=args.limit)
    if args.json:
        for r in rows:
            print(json.dumps(r, default=_json_default))
        return 0
    if not rows:
        print("no runs yet")
        return 0
    for r in rows:
        when = r["submitted_at"].strftime("%Y-%m-%d %H:%M:%S")
        goal = r["goal"] if len(r["goal"]) <= 60 else r["goal"][:57] + "..."
        fork = f"  (fork of {r['forked_from']})" if r["forked_from"] else ""
        print(f"{r['run_id']}  {when}  {r['status']:<9}  {r['agent']:<12}  {goal}{fork}")
    return 0


def cmd_events(args: argparse.Namespace) -> int:
    from actors.runtime.client import Client

    with Client(start_ray=False) as client:
        records = client.events(args.run_id)
    for rec in records:
        if args.json:
            print(json.dumps(event_json(rec), default=_json_default))
        else:
            e = rec.event
            print(f"{rec.position:>6}  {e.timestamp:%H:%M:%S}  {e.stream_id}@{e.version}  {e.type_name}  {describe(e, brief=True)}")
    return 0


def _store() -> Any:
    from actors.runtime.settings import Settings
    from events.store import EventStore

    return EventStore(Settings.from_env().store_url)


def cmd_log(args: argparse.Namespace) -> int:
    from projections.debug import timeline

    with _store() as store:
        for line in timeline(store, args.run_id, color=sys.stdout.isatty()):
            print(line)
    return 0


def cmd_state(args: argparse.Namespace) -> int:
    from projections.debug import state_at

    with _store() as store:
        version, state = state_at(store, args.stream_id, args.at)
    print(json.dumps({"stream": args.stream_id, "version": version, "state": state.model_dump(mode="json")}, indent=2))
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    from projections.fixtures import load_fixture
    from projections.replay import replay_run

    if args.fixture:
        store, run_id = load_fixture(args.fixture)
    elif args.run_id:
        store, run_id = _store(), args.run_id
    else:
        raise UserError("give a RUN_ID or --fixture FILE")
    with store:
        report = replay_run(store, run_id)
    if report.ok:
        print(
            f"replay of run {run_id}: identical — {report.events} events in {_streams(report.streams)}, "
            f"{report.llm_calls} LLM calls and {report.tool_calls} tool calls served "
            f"from the log, 0 live calls; {report.replay_s:.3f}s against {report.original_s:.1f}s "
            f"originally ({report.speedup:,.0f}x faster)"
        )
        return 0
    print(f"replay of run {run_id} DIVERGED", file=sys.stderr)
    print(report.divergence.describe(), file=sys.stderr)
    return 1


def _streams(streams: list[str]) -> str:
    """`agent:ab12` → "stream agent:ab12"; more → "3 streams (agent:ab12, ...)"."""
    if len(streams) == 1:
        return f"stream {streams[0]}"
    shown = ", ".join(streams[:3]) + (", ..." if len(streams) > 3 else "")
    return f"{len(streams)} streams ({shown})"


def cmd_fork(args: argparse.Namespace) -> int:
    from actors.runtime.client import Client

    params = None
    if args.temperature is not None:
        from actors.runtime.client import DEFAULT_LLM_PARAMS

        params = {**DEFAULT_LLM_PARAMS, "temperature": args.temperature}
    with Client() as client:
        handle = client.fork(args.run_id, args.at, model=args.model, llm_params=params)
        print(f"run {handle.run_id} (forked from {args.run_id} at position {args.at})", flush=True)
        return _follow(handle, args.quiet)


def cmd_diff(args: argparse.Namespace) -> int:
    from projections.debug import diff_runs

    with _store() as store:
        for line in diff_runs(store, args.run_a, args.run_b).lines():
            print(line)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from projections.fixtures import export_run

    with _store() as store:
        n = export_run(store, args.run_id, args.out)
    print(f"wrote {n} events of run {args.run_id} to {args.out}")
    return 0


def cmd_model(args: argparse.Namespace) -> int:
    from actors.runtime.llm.local_model import ensure_model
    from actors.runtime.settings import Settings

    print(ensure_model(Settings.from_env()))
    return 0


# -- helpers --------------------------------------------------------------------------------------


def event_json(rec: Recorded) -> dict[str, Any]:
    e = rec.event
    return {
        "position": rec.position,
        "stream": e.stream_id,
        "version": e.version,
        "type": e.type_name,
        "run_id": e.run_id,
        "timestamp": e.timestamp.isoformat(),
        "causation_id": e.causation_id,
        "command_id": e.command_id,
        "data": e.payload(),
    }


def _json_default(o: Any) -> Any:
    if isinstance(o, datetime):
        return o.isoformat()
    if isinstance(o, bytes):
        return o.hex()
    return str(o)


def _is_user_error(e: BaseException) -> bool:
    from actors.runtime.llm.types import LlmError
    from actors.runtime.run import UnknownRun
    from projections.debug import UnknownStream
    from projections.fixtures import FixtureError
    from actors.runtime.registry import RegistryError
    from actors.runtime.settings import ConfigError
    from events.store import StoreUnavailable

    known: tuple[type[BaseException], ...] = (
        UserError,
        ConfigError,
        StoreUnavailable,
        UnknownRun,
        RegistryError,
        ValueError,
        FileNotFoundError,
        TimeoutError,
        LlmError,
        UnknownStream,
        FixtureError,
    )
    from actors.index.vectors import IndexLocked
    from actors.runtime.client import LlmUnavailable
    from actors.runtime.llm.local_server import LocalServerError

    return isinstance(e, known + (LlmUnavailable, LocalServerError, IndexLocked))


def _one_line(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return lines[0] if lines else type(e).__name__


if __name__ == "__main__":
    # Run the imported module, not this `__main__` copy: the subcommands' modules raise
    # `actors.runtime.cli.UserError`, which must be the class `main` catches.
    from actors.runtime.cli import main as _main

    sys.exit(_main())
