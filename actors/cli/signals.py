"""`chorus signal RUN NAME [JSON]`: deliver a signal to a run whose agent function waits for
one (`ctx.wait_for(NAME)`), then follow the run to its end or its next wait; and
`chorus run GOAL --agent pkg.mod:function` for agent functions (`follow_function`)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from actors.runtime.cli_dialect import run_arg
from actors.runtime.client import Client, RunHandle
from actors.runtime.console import describe
from actors.runtime.durable import SLEEP
from actors.runtime.function_agent import KIND
from actors.runtime.registry import Registry


def add_parser(sub: Any) -> None:
    sig = sub.add_parser("signal", help="send a signal to a run whose agent function waits for one (ctx.wait_for)")
    run_arg(sig, help="the waiting run")
    sig.add_argument("name", help="the signal's name, as the agent waits for it")
    sig.add_argument("payload", nargs="?", default="null", help="its payload, as JSON (default: null)")
    sig.add_argument("--quiet", "-q", action="store_true", help="print only the answer")
    sig.set_defaults(func=cmd_signal)
    run = sub.choices.get("run")  # the default kind's verb: `--agent` runs a function instead
    if run is not None:
        run.add_argument(
            "--agent", metavar="PKG.MOD:FUNCTION",
            help="run an agent function (@agent) by its import path instead of the ReAct agent",
        )  # fmt: skip
        react = run.get_default("func")
        run.set_defaults(func=lambda args: cmd_run_function(args) if args.agent else react(args))


def cmd_run_function(args: argparse.Namespace) -> int:
    from events.runs import Budget

    budget = Budget(max_llm_calls=args.max_llm_calls, max_tokens=args.max_tokens, max_wall_seconds=args.max_seconds)
    with Client() as client:
        handle = client.submit(args.goal, agent=args.agent, root=args.root, budget=budget)
        print(f"run {handle.run_id}", flush=True)
        return follow_function(handle, args.quiet)


def cmd_signal(args: argparse.Namespace) -> int:
    try:
        payload = json.loads(args.payload)
    except json.JSONDecodeError as e:
        raise ValueError(f"the payload is not JSON: {e}") from None
    with Client() as client:
        handle = client.signal(args.run_id, args.name, payload)
        print(f"signal {args.name!r} sent to run {args.run_id}", flush=True)
        return follow_function(handle, args.quiet)


def follow_function(handle: RunHandle, quiet: bool = False) -> int:
    """Show the run's steps until it ends or waits for a signal; 0 for an answer or a wait."""
    client, kind = handle.client, Registry.run_kind(KIND)
    seen = 0

    def drain() -> None:
        nonlocal seen
        for rec in client.store.read_all(seen + 1, run_id=handle.run_id):
            seen = rec.position
            line = describe(rec.event, kind=kind)
            if line and not quiet:
                print(line, file=sys.stderr, flush=True)

    ref = getattr(handle, "_ref", None)
    if ref is not None:
        import ray

        while not ray.wait([ref], timeout=0.3)[0]:
            drain()
        try:
            ray.get(ref)
        except Exception as e:
            client.fail_run(handle.run_id, e)
    else:
        handle.wait()
    drain()
    result = handle.result
    state = client.run_state(handle.run_id)
    if state.status == "waiting":
        until = f" until {state.wake_at:%Y-%m-%d %H:%M:%S} UTC" if state.wake_at else ""
        if state.waiting_for == SLEEP:
            print(f"run {handle.run_id} sleeps{until}: it is served again then (chorus runs shows it waiting)")
        else:
            print(f"run {handle.run_id} waits for signal {state.waiting_for!r}{until}: chorus signal {handle.run_id} {state.waiting_for} JSON")
        return 0
    if result.ok:
        print(result.answer or "")
        return 0
    print(f"chorus: run {handle.run_id} failed: {result.error.line() if result.error else result.status}", file=sys.stderr)
    return 1
