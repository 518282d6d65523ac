"""`chorus relay`: a builder/verifier relay from the command line.

    chorus relay "GOAL" --root DIR [--roadmap FILE] [--max-retries N] [--resubmit CMD]
                 [--probe NAME=CMD ...]
    chorus relay --show RUN [--json]
    chorus escalations [RUN] [--open] [--json]
    chorus resolve RUN ESCALATION_ID --note TEXT [--by NAME]

The first plans the roadmap (from FILE, or the Orchestrator's model call), then runs the
turns in this process with live progress on stderr: turn, item, builder summary, files
changed, verdict, defects, escalations, and what the resubmit hook did (CMD, split as a
shell would, run in the workspace in the sandbox after each checkpoint). The workspace is a git repository the relay keeps
in step with its log (a commit per checkpoint). The second reads a relay from the views:
the roadmap with statuses, checkpoints, defects and escalations. Exit status: 0 done, 2 bad
input (one line; nothing written), 130 interrupted (`chorus resume RUN` goes on from the log).
A `--probe NAME=CMD` (repeatable; CMD split as a shell would) is a domain probe the Verifier
runs in its sandbox on every turn, after the tests: exit 0 passes.

`chorus escalations` lists the escalations of one relay (or of every relay), open and
resolved; `chorus resolve` records that a person dealt with one (EscalationResolved, with
the note and who), whether the relay still runs or ended.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import Any

from actors.runtime.cli_dialect import add_json, add_root, print_json
from actors.runtime.errors import UserError

DEFAULT_RETRIES = 3


def add_parsers(sub: Any) -> None:
    p = sub.add_parser(
        "relay",
        help="a builder/verifier relay over a roadmap (seed 004), or --show RUN",
    )
    p.add_argument("goal", nargs="?", help="what to build")
    add_root(p, "the folder the relay builds in (made a git repository)", old="--workspace", dest="workspace")
    p.add_argument(
        "--roadmap",
        metavar="FILE",
        help="the roadmap: YAML or a markdown list (else the model plans it)",
    )
    p.add_argument(
        "--max-retries",
        type=int,
        default=DEFAULT_RETRIES,
        help="retries per item before escalating",
    )
    p.add_argument(
        "--resubmit",
        metavar="CMD",
        help="a command run in the workspace after each checkpoint (the resubmit hook)",
    )
    p.add_argument(
        "--probe",
        metavar="NAME=CMD",
        action="append",
        default=[],
        help="a domain probe run by the verifier on every turn, in its sandbox (exit 0 passes); repeatable",
    )
    p.add_argument(
        "--show",
        metavar="RUN",
        help="a relay's roadmap, checkpoints, defects and escalations",
    )
    add_json(p, "with --show, the relay as one object")
    p.add_argument("--quiet", "-q", action="store_true", help="print only the outcome")
    p.set_defaults(func=cmd_relay)

    e = sub.add_parser("escalations", help="a relay's escalations (every relay's without RUN), open and resolved")
    e.add_argument("run_id", nargs="?", metavar="RUN", help="the relay (default: every relay)")
    e.add_argument("--open", action="store_true", help="only those nobody resolved yet")
    add_json(e, "one escalation per line")
    e.set_defaults(func=cmd_escalations)

    r = sub.add_parser("resolve", help="record that a person dealt with a relay's escalation")
    r.add_argument("run_id", metavar="RUN", help="the relay")
    r.add_argument("escalation_id", metavar="ESCALATION_ID", help="as `chorus escalations RUN` lists it")
    r.add_argument("--note", required=True, help="what was done or decided")
    r.add_argument("--by", default="", metavar="NAME", help="who resolved it (default: $USER)")
    r.set_defaults(func=cmd_resolve)


def parse_probes(specs: list[str]) -> dict[str, list[str]]:
    """`NAME=CMD` flags as the run's probes; ValueError (one line) for a bad one."""
    probes: dict[str, list[str]] = {}
    for spec in specs:
        name, sep, command = spec.partition("=")
        if not sep or not name.strip() or not command.strip():
            raise ValueError(f"--probe {spec!r}: give NAME=COMMAND")
        if name.strip() in probes:
            raise ValueError(f"--probe {name.strip()!r} is given twice")
        probes[name.strip()] = shlex.split(command)
    return probes


def cmd_escalations(args: argparse.Namespace) -> int:
    from actors.relay.escalations import describe, escalations
    from actors.runtime.client import Client
    from actors.runtime.run import UnknownRun

    with Client(start_ray=False) as client:
        try:
            found = escalations(client, args.run_id, open_only=args.open)
        except (UnknownRun, ValueError) as e:
            raise UserError(str(e)) from None
    if args.json:
        for x in found:
            print_json(x)
        return 0
    if not found:
        print("no open escalations" if args.open else "no escalations")
    for x in found:
        print(describe(x) if args.run_id else f"relay {x['run_id']}: {describe(x)}")
    return 0


def cmd_resolve(args: argparse.Namespace) -> int:
    import getpass

    from actors.relay.escalations import resolve
    from actors.runtime.client import Client
    from actors.runtime.run import UnknownRun

    if not args.note.strip():
        raise UserError("--note is empty: say what was done or decided")
    who = args.by or getpass.getuser()
    with Client(start_ray=False) as client:
        try:
            x = resolve(client, args.run_id, args.escalation_id, args.note, who)
        except (UnknownRun, ValueError) as e:
            raise UserError(str(e)) from None
    print(f"{x['escalation_id']}: resolved by {x['resolved_by']}: {x['resolution']}")
    return 0


def cmd_relay(args: argparse.Namespace) -> int:
    if args.show:
        if args.goal or args.workspace or args.roadmap or args.resubmit or args.probe:
            raise UserError("--show RUN takes no goal, --root, --roadmap, --resubmit or --probe")
        return show(args.show, args.json)
    if not args.goal or not args.workspace:
        raise UserError('give a goal and --root DIR: chorus relay "GOAL" --root DIR')
    from actors.relay.session import check_input

    try:
        args.resubmit = shlex.split(args.resubmit) if args.resubmit is not None else None
        args.probes = parse_probes(args.probe)
        check_input(
            args.goal, args.workspace, args.roadmap, args.max_retries, args.resubmit, args.probes
        )  # before anything is written
    except (ValueError, OSError) as e:
        raise UserError(str(e).strip().splitlines()[0]) from None
    return run(args)


def run(args: argparse.Namespace) -> int:
    from actors.relay.progress import describe
    from actors.relay.recording import scheduler_stream
    from actors.relay.resubmit import describe_outcome
    from actors.relay.session import outcome, serve_relay, start_relay
    from actors.runtime.client import Client, new_run_id
    from actors.relay.events import AppResubmitted

    def progress(e: Any) -> None:
        line = "" if args.quiet else describe(e) or (describe_outcome(e) if isinstance(e, AppResubmitted) else None)
        if line:
            print(line, file=sys.stderr, flush=True)

    with Client(start_ray=False) as client:
        run_id = new_run_id()
        start_relay(
            client,
            args.goal,
            run_id=run_id,
            workspace=args.workspace,
            roadmap=args.roadmap,
            max_retries=args.max_retries,
            resubmit=args.resubmit,
            probes=args.probes or None,
        )
        print(f"relay {run_id}", flush=True)
        for e in client.store.read_stream(scheduler_stream(run_id)):  # the plan, and the first turn
            progress(e)
        state = serve_relay(client, run_id, on_event=progress)
    print(f"relay {run_id}: {outcome(state)}")
    return 0


def show(run_id: str, as_json: bool = False) -> int:
    from actors.relay.recording import scheduler_stream
    from actors.relay.scheduler import SchedulerBehaviour
    from actors.relay.session import KIND
    from actors.runtime.client import Client
    from actors.runtime.run import UnknownRun
    from actors.runtime.shell import ActorShell
    from actors.relay.checkpoints import RelayCheckpoints

    with Client(start_ray=False) as client:
        try:
            run = client.run_state(run_id)
        except UnknownRun as e:
            raise UserError(str(e)) from None
        if run.kind != KIND:
            raise UserError(f"run {run_id} is not a relay (it is {run.kind or 'react'})")
        state = ActorShell(SchedulerBehaviour(), scheduler_stream(run_id), client.store).load().state
        views = RelayCheckpoints.open(client.store)
        task = state.task_id or run_id
        checkpoints, defects, escalations = (
            views.checkpoints(task),
            views.defects(task),
            views.escalations(task),
        )
    if as_json:
        print_json({
            "run_id": run_id, "status": run.status, "goal": run.goal, "workspace": run.params.get("workspace"),
            "tokens": state.tokens_used, "state": state.status, "stop_reason": state.stop_reason,
            "roadmap": [{"title": item.title, "status": status} for item, status in zip(state.items, state.item_status, strict=True)],
            "checkpoints": [{"checkpoint_id": c.checkpoint_id, "files_changed": c.metadata.get("files_changed", [])} for c in checkpoints],
            "defects": [{"defect_id": d.defect_id, "type": d.defect_type, "severity": d.severity, "resolved": d.resolved,
                         "description": d.description} for d in defects],
            "escalations": [{"escalation_id": x.escalation_id, "turn": x.turn, "resolved": x.resolved} for x in escalations],
        })  # fmt: skip
        return 0
    print(f"relay {run_id} ({run.status}): {run.goal}")
    print(f"workspace {run.params.get('workspace')}, {state.tokens_used} tokens")
    print("roadmap:")
    for n, (item, status) in enumerate(zip(state.items, state.item_status, strict=True), 1):
        here = " <- now" if state.status in ("building", "verifying") and n - 1 == state.index else ""
        print(f"  {n}. [{status}] {item.title}{here}")
    print(f"checkpoints ({len(checkpoints)}):")
    for c in checkpoints:
        print(f"  {c.checkpoint_id}: {', '.join(c.metadata.get('files_changed', [])) or 'no files changed'}")
    print(f"defects ({len(defects)}):")
    for d in defects:
        first = next((ln for ln in d.description.splitlines() if ln.strip()), "")
        print(f"  {d.defect_id} [{d.defect_type}, {d.severity}{', resolved' if d.resolved else ''}]: {first[:140]}")
    print(f"escalations ({len(escalations)}):")
    for x in escalations:
        print(
            f"  {x.escalation_id} (turn {x.turn}{', resolved' if x.resolved else ''}): {x.metadata.get('roadmap_chunk', '').splitlines()[0] if x.metadata.get('roadmap_chunk') else ''}"
        )
    if state.status == "stopped":
        print(f"stopped: {state.stop_reason}")
    return 0
