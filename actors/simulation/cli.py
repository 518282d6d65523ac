"""`chorus sim`: world simulation sessions from the command line.

    chorus sim new actors/simulation/packs/lighthouse.yaml   # validate, create: prints `session <id>`
    chorus sim step SESSION --cycles 3                         # live: cycle, each synth's action, outcomes
    chorus sim show SESSION [--at CYCLE] [--json]              # who is where, what they carry, processes
    chorus sim say SESSION "A ship's horn sounds."             # a stimulus, perceived on the next step
    chorus sim usage SESSION [--json]                          # LLM calls, tokens and cost per synth
    chorus sim sessions [--json]                               # every session

A session is a run: `chorus runs / log / replay / fork SESSION --at CYCLE / diff` work on
it. Exit status: 0 done, 2 bad input (one line per problem; nothing written), 130
interrupted (the cycle in flight is not committed: the world is as it was before it).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from typing import Any

from actors.runtime.cli_dialect import add_json, print_json
from actors.runtime.client import Client, new_run_id
from actors.runtime.errors import UserError
from actors.runtime.llm.call_progress import CallWatch
from actors.simulation.client import KIND, Simulation, create_session
from actors.simulation.director import DirectorConfig
from actors.simulation.loader import PackError, load_pack
from actors.simulation.overview import overview
from actors.simulation.progress import describe
from actors.simulation.session import Canonical
from actors.simulation.streams import synth_stream
from projections.audit import AuditTrail


def add_parsers(sub: Any) -> None:
    p = sub.add_parser("sim", help="world simulation sessions (seed 002): new, step, show, say, usage, sessions")
    verbs = p.add_subparsers(metavar="VERB")

    new = verbs.add_parser("new", help="validate a content pack and start a session from it")
    new.add_argument("pack", help="a content pack (YAML), e.g. actors/simulation/packs/lighthouse.yaml")
    new.add_argument("--max-microcycles", type=int, default=DirectorConfig().max_microcycles,
                     help="microcycles a director cycle may run (each is one LLM call per affected synth)")  # fmt: skip
    new.add_argument("--perception-policy", choices=["none", "low_light"], default="none",
                     help="low_light: dim light makes what synths see vaguer (LowLightAmbiguityPolicy)")  # fmt: skip
    new.set_defaults(func=cmd_new)

    step = verbs.add_parser("step", help="run director cycles, with live progress")
    step.add_argument("session", metavar="SESSION", help="the session (its run id, as `chorus sim new` printed it)")
    step.add_argument("--cycles", "-n", type=int, default=1, metavar="N", help="director cycles to run (default 1)")
    step.add_argument("--in-process", action="store_true", help="run the director and synths in this process, not on Ray")
    step.add_argument("--quiet", "-q", action="store_true", help="print only the summary")
    step.set_defaults(func=cmd_step)

    show = verbs.add_parser("show", help="the world now, or after a cycle")
    show.add_argument("session", metavar="SESSION", help="the session (its run id, as `chorus sim new` printed it)")
    show.add_argument("--at", type=int, metavar="CYCLE", help="the world after this cycle (default: now)")
    add_json(show, "the overview as one object")
    show.set_defaults(func=cmd_show)

    say = verbs.add_parser("say", help="queue an outside stimulus for the next step")
    say.add_argument("session", metavar="SESSION", help="the session (its run id, as `chorus sim new` printed it)")
    say.add_argument("text", help="what the synths perceive")
    say.add_argument("--source", default="a voice", help="who it comes from, as the synths perceive it")
    say.set_defaults(func=cmd_say)

    usage = verbs.add_parser("usage", help="LLM calls, tokens and cost per synth (from the audit trail)")
    usage.add_argument("session", metavar="SESSION", help="the session (its run id, as `chorus sim new` printed it)")
    add_json(usage, "one synth per line")
    usage.set_defaults(func=cmd_usage)

    sessions = verbs.add_parser("sessions", help="every simulation session, newest first")
    add_json(sessions, "one session per line")
    sessions.set_defaults(func=cmd_sessions)
    p.set_defaults(func=lambda args: p.print_help() or 2)


def cmd_new(args: argparse.Namespace) -> int:
    if args.max_microcycles < 1:
        raise UserError(f"--max-microcycles must be at least 1, not {args.max_microcycles}")
    try:
        pack = load_pack(args.pack)
    except PackError as e:
        for line in str(e).splitlines():
            print(f"chorus: error: {line}", file=sys.stderr)
        return 2
    for warning in pack.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    with Client() as client:
        config = DirectorConfig(max_microcycles=args.max_microcycles, perception_policy=args.perception_policy)
        run_id = create_session(client, args.pack, run_id=new_run_id(), config=config, pack=pack)
    print(f"session {run_id}")
    names = ", ".join(s.identity.name for s in pack.synths)
    print(f"pack {pack.name!r}: {len(pack.world.locations)} locations, {len(pack.world.entities)} entities, synths {names}")
    return 0


def cmd_step(args: argparse.Namespace) -> int:
    if args.cycles < 1:
        raise UserError(f"--cycles must be at least 1, not {args.cycles}")
    with Client() as client:
        session = Simulation(client, args.session, ray=not args.in_process)
        canonical = Canonical.load(client.store, args.session)
        names = {sid: s.identity.name for sid, s in canonical.synths.items()}
        progress = _Progress(client, args.session, names) if not args.quiet else None
        try:
            results = session.step(args.cycles)
        finally:
            if progress is not None:
                progress.finish(client.store.max_position())
            session.close()
    committed = sum(1 for r in results if r["committed"])
    print(f"session {args.session}: {committed} of {len(results)} cycle(s) committed, now at cycle {results[-1]['cycle']}")
    return 0


class _Progress:
    """Prints the session's events as they are committed, from another thread; `finish`
    lets it print everything up to the log's end before it stops."""

    def __init__(self, client: Client, run_id: str, names: dict[str, str]) -> None:
        self.stop = threading.Event()
        self.seen = 0
        self.end: int | None = None
        self.calls = CallWatch(client.settings.data_dir)  # a synth's long call: tokens so far
        start = client.store.max_position() + 1
        self.thread = threading.Thread(target=self._run, args=(client, run_id, start, names), daemon=True)
        self.thread.start()

    def _run(self, client: Client, run_id: str, start: int, names: dict[str, str]) -> None:
        for rec in client.store.follow(start, stop=self.stop, poll_interval=0.1):
            self.seen = rec.position
            if rec.event.run_id == run_id:
                self.calls.seen(rec.event)
                line = describe(rec.event, names)
                if line:
                    print(line, file=sys.stderr, flush=True)
            if self.end is not None and self.seen >= self.end:
                return

    def finish(self, end: int) -> None:
        self.end = end
        deadline = time.monotonic() + 10
        while self.thread.is_alive() and self.seen < end and time.monotonic() < deadline:
            time.sleep(0.05)
        self.stop.set()
        self.thread.join(timeout=5)
        self.calls.stop()


def cmd_show(args: argparse.Namespace) -> int:
    with Client(start_ray=False) as client:
        view = overview(client.store, args.session, at=args.at)
    if args.json:
        print(json.dumps(view, indent=2, default=str))
        return 0
    env = ", ".join(f"{k}={v}" for k, v in view["environment"].items())
    print(f"session {view['session']} ({view['pack']}), cycle {view['cycle']}, tick {view['tick']}")
    print(f"environment: {env or '-'}")
    print("processes: " + (", ".join(f"{k}: {v}" for k, v in view["processes"].items()) or "-"))
    for s in view["synths"]:
        carries = ", ".join(s["carries"]) or "nothing"
        blind = "" if "visual" in s["senses"] else " (no sight)"
        print(f"{s['name']}{blind} is in {s['location']}, carries {carries}, mood {s['mood']}")
    for loc in view["locations"]:
        things = ", ".join(loc["things"]) or "-"
        who = ", ".join(loc["synths"])
        print(f"  {loc['name']}: {things}" + (f"  [{who}]" if who else ""))
    if view["pending_stimuli"]:
        print("pending stimuli: " + "; ".join(view["pending_stimuli"]))
    if view["pending_speech"]:
        print("speech heard next cycle: " + "; ".join(view["pending_speech"]))
    return 0


def cmd_say(args: argparse.Namespace) -> int:
    with Client(start_ray=False) as client:
        Simulation(client, args.session, ray=False, llm=_NoModel()).stimulus(args.text, args.source)
    print(f"queued for session {args.session}: {args.text!r} (perceived on the next step)")
    return 0


def cmd_usage(args: argparse.Namespace) -> int:
    """Totals per synth, read from the audit view (`chorus audit llm-calls --run SESSION`
    writes the calls themselves as llm_calls.jsonl)."""
    with Client(start_ray=False) as client:
        canonical = Canonical.load(client.store, args.session)
        rows = {u.key: u for u in AuditTrail.open(client.store).usage_by_actor(args.session)}
    synths = sorted(canonical.synths.items(), key=lambda kv: kv[1].identity.name)
    if args.json:
        for sid, state in synths:
            u = rows.get(synth_stream(args.session, sid))
            print_json({"synth": state.identity.name, "stream_id": synth_stream(args.session, sid),
                        "calls": u.calls if u else 0, "failed": u.failed if u else 0,
                        "prompt_tokens": u.prompt_tokens if u else 0, "completion_tokens": u.completion_tokens if u else 0,
                        "cost_usd": u.cost_usd if u else None})  # fmt: skip
        return 0
    print(f"{'synth':<12} {'calls':>5} {'failed':>6} {'prompt':>8} {'completion':>10} {'cost $':>8}")
    for sid, state in synths:
        u = rows.get(synth_stream(args.session, sid))
        calls, failed = (u.calls, u.failed) if u else (0, 0)
        prompt, completion = (u.prompt_tokens, u.completion_tokens) if u else (0, 0)
        cost = f"{u.cost_usd:.4f}" if u and u.cost_usd is not None else "-"
        print(f"{state.identity.name:<12} {calls:>5} {failed:>6} {prompt:>8} {completion:>10} {cost:>8}")
    return 0


def cmd_sessions(args: argparse.Namespace) -> int:
    with Client(start_ray=False) as client:
        rows = [r for r in client.runs() if r["kind"] == KIND]
    if args.json:
        for r in rows:
            print_json(r)
        return 0
    if rows:
        print(f"{'RUN':<{len(rows[0]['run_id'])}}  {'STATUS':<9}  PACK")
    for r in rows:
        print(f"{r['run_id']}  {r['status']:<9}  {r['goal']}" + (f"  (fork of {r['forked_from']})" if r["forked_from"] else ""))
    if not rows:
        print("no simulation sessions yet: chorus sim new PACK.yaml", file=sys.stderr)
    return 0


class _NoModel:
    """Queuing a stimulus calls no model; this stands in so no endpoint is started."""

    model = "none"

    def complete(self, request: Any) -> Any:
        raise RuntimeError("queuing a stimulus calls no model")
