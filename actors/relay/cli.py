"""`chorus relay`: a builder/verifier relay from the command line.

    chorus relay "GOAL" --workspace DIR [--roadmap FILE] [--max-retries N] [--resubmit CMD]
    chorus relay --show RUN

The first plans the roadmap (from FILE, or the Orchestrator's model call), then runs the
turns in this process with live progress on stderr: turn, item, builder summary, files
changed, verdict, defects, escalations, and what the resubmit hook did (CMD, split as a
shell would, run in the workspace in the sandbox after each checkpoint). The workspace is a git repository the relay keeps
in step with its log (a commit per checkpoint). The second reads a relay from the views:
the roadmap with statuses, checkpoints, defects and escalations. Exit status: 0 done, 2 bad
input (one line; nothing written), 130 interrupted (a restarted serve resumes from the log).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import Any

from actors.runtime.errors import UserError

DEFAULT_RETRIES = 3


def add_parsers(sub: Any) -> None:
    p = sub.add_parser(
        "relay",
        help="a builder/verifier relay over a roadmap (seed 004), or --show RUN",
    )
    p.add_argument("goal", nargs="?", help="what to build")
    p.add_argument(
        "--workspace",
        metavar="DIR",
        help="the folder the relay builds in (made a git repository)",
    )
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
        "--show",
        metavar="RUN",
        help="a relay's roadmap, checkpoints, defects and escalations",
    )
    p.add_argument("--quiet", "-q", action="store_true")
    p.set_defaults(func=cmd_relay)


def cmd_relay(args: argparse.Namespace) -> int:
    if args.show:
        if args.goal or args.workspace or args.roadmap or args.resubmit:
            raise UserError("--show RUN takes no goal, --workspace, --roadmap or --resubmit")
        return show(args.show)
    if not args.goal or not args.workspace:
        raise UserError('give a goal and --workspace DIR: chorus relay "GOAL" --workspace DIR')
    from actors.relay.session import check_input

    try:
        args.resubmit = shlex.split(args.resubmit) if args.resubmit is not None else None
        check_input(
            args.goal, args.workspace, args.roadmap, args.max_retries, args.resubmit
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
    from events.relay import AppResubmitted

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
        )
        print(f"relay {run_id}", flush=True)
        for e in client.store.read_stream(scheduler_stream(run_id)):  # the plan, and the first turn
            progress(e)
        state = serve_relay(client, run_id, on_event=progress)
    print(f"relay {run_id}: {outcome(state)}")
    return 0


def show(run_id: str) -> int:
    from actors.relay.recording import scheduler_stream
    from actors.relay.scheduler import SchedulerBehaviour
    from actors.relay.session import KIND
    from actors.runtime.client import Client
    from actors.runtime.run import UnknownRun
    from actors.runtime.shell import ActorShell
    from projections.relay_checkpoints import RelayCheckpoints

    with Client(start_ray=False) as client:
        try:
            run = client.run_state(run_id)
        except UnknownRun as e:
            raise UserError(str(e)) from None
        if run.agent != KIND:
            raise UserError(f"run {run_id} is not a relay (it is {run.agent or 'react'})")
        state = ActorShell(SchedulerBehaviour(), scheduler_stream(run_id), client.store).load().state
        views = RelayCheckpoints.open(client.store)
        task = state.task_id or run_id
        checkpoints, defects, escalations = (
            views.checkpoints(task),
            views.defects(task),
            views.escalations(task),
        )
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
