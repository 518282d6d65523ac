"""`chorus audit`: the audit trail from the command line.

    chorus audit events [--run R] [--stream S] [--type T ...] [--since T] [--until T] [--limit N] [--json]
    chorus audit export --out FILE [--run R]       # seed 002's append-only audit log, JSONL
    chorus audit llm-calls [--run R] [--stream S] [--out FILE] [--json]   # the LLM call log (llm_calls.jsonl)
    chorus audit usage [--run R] [--by run|actor] [--json]  # tokens and cost
    chorus audit verify [--run R] [--json]         # every recorded request against its stored hash

`--json` prints one object per line; an event is the one event shape (docs/reference.md).

Each catches the audit view up first. Bad input (a run the trail does not know, a time
that is not ISO-8601, a folder that does not exist) is one line and exit 2.
"""

from __future__ import annotations

import argparse
import json
from datetime import datetime
from pathlib import Path
from typing import Any

from actors.cli.paths import writable_file
from actors.runtime.cli_dialect import (
    add_json,
    add_out,
    event_record,
    json_default,
    print_json,
)
from actors.runtime.console import open_store
from actors.runtime.llm.types import LlmRequest
from projections.audit_query import AuditEvent, AuditTrail, LlmCall, Usage


def add_parsers(subparsers: argparse._SubParsersAction, store_option: Any) -> None:  # type: ignore[type-arg]
    audit = subparsers.add_parser("audit", help="the audit trail: events, exports, LLM call log, usage")
    audit.set_defaults(func=lambda args: (audit.print_help(), 2)[1])
    sub = audit.add_subparsers(metavar="ACTION")

    events = sub.add_parser("events", help="events in log order, filtered by run, actor, type and time")
    _filters(events)
    events.add_argument("--type", action="append", dest="types", metavar="TYPE", help="event type (repeatable)")
    events.add_argument("--since", type=_when, metavar="TIME", help="ISO-8601, inclusive (naive = UTC)")
    events.add_argument("--until", type=_when, metavar="TIME", help="ISO-8601, exclusive")
    events.add_argument("--after", type=int, default=0, metavar="POSITION", help="only after this log position")
    events.add_argument("--limit", type=int, metavar="N", help="at most N events")
    add_json(events, "one event per line (the event shape of docs/reference.md)")
    store_option(events)
    events.set_defaults(func=cmd_events)

    export = sub.add_parser("export", help="write the trail (or one run's) as JSON lines, atomically")
    add_out(export, "the JSON-lines file to write (its folder must exist)")
    export.add_argument("out_file", type=Path, nargs="?", help=argparse.SUPPRESS)  # the old positional FILE
    export.add_argument("--run", metavar="RUN", help="only this run's events")
    store_option(export)
    export.set_defaults(func=cmd_export)

    calls = sub.add_parser("llm-calls", help="every LLM call: prompt, model, seed, response, tokens, latency")
    _filters(calls)
    add_out(calls, "write llm_calls.jsonl to FILE instead")
    add_json(calls, "one call per line")
    store_option(calls)
    calls.set_defaults(func=cmd_llm_calls)

    usage = sub.add_parser("usage", help="token and cost totals per run or per actor")
    usage.add_argument("--run", metavar="RUN", help="only this run")
    usage.add_argument("--by", choices=("run", "actor"), default="run", help="one row per run or per actor (default run)")
    add_json(usage, "one row per line")
    store_option(usage)
    usage.set_defaults(func=cmd_usage)

    verify = sub.add_parser("verify", help="check every recorded LLM request's text against its stored hash")
    verify.add_argument("--run", metavar="RUN", help="only this run's requests")
    add_json(verify, "the count and each edited request as one object")
    store_option(verify)
    verify.set_defaults(func=cmd_verify)


def _filters(p: argparse.ArgumentParser) -> None:
    p.add_argument("--run", metavar="RUN", help="only this run")
    p.add_argument("--stream", metavar="STREAM", help="only one actor's stream, e.g. agent:RUN")


def _when(text: str) -> datetime:
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO-8601 time: {text!r}") from None


def cmd_events(args: argparse.Namespace) -> int:
    if args.limit is not None and args.limit < 1:
        raise ValueError(f"--limit must be positive, not {args.limit}")
    with _trail(args) as trail:
        shown = 0
        if not args.json:
            print(f"{'POSITION':>8}  {'TIME':<23}  STREAM@VERSION  TYPE  PAYLOAD")
        for e in trail.iter_events(
            run_id=args.run, stream_id=args.stream, types=args.types, since=args.since,
            until=args.until, after_position=args.after, limit=args.limit,
        ):
            print(_event_json(e) if args.json else _event_line(e))
            shown += 1
        if not args.json:
            print(f"{shown} event(s)")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    if args.out is not None and args.out_file is not None:
        raise ValueError("give --out FILE once (FILE alone is its old spelling)")
    args.out = args.out if args.out is not None else args.out_file
    if args.out is None:
        raise ValueError("give --out FILE: the file to write")
    writable_file(args.out)
    with _trail(args) as trail:
        n = trail.export_jsonl(args.out, run_id=args.run)
    print(f"wrote {n} events{f' of run {args.run}' if args.run else ''} to {args.out}")
    return 0


def cmd_llm_calls(args: argparse.Namespace) -> int:
    if args.out is not None:
        writable_file(args.out)
        if args.stream is not None:
            raise ValueError("--out writes whole runs: leave out --stream")
    with _trail(args) as trail:
        if args.out is not None:
            n = trail.export_llm_calls(args.out, run_id=args.run)
            print(f"wrote {n} LLM calls to {args.out}")
            return 0
        calls = trail.llm_calls(run_id=args.run, stream_id=args.stream)
        if args.json:
            for call in calls:
                print_json(call.__dict__)
            return 0
        print(f"{'POSITION':>8}  {'STREAM#CALL':<24}  {'STATUS':<9}  MODEL  TOKENS  LATENCY  COST")
        for call in calls:
            print(_call_line(call))
        print(f"{len(calls)} LLM call(s)")
    return 0


def cmd_usage(args: argparse.Namespace) -> int:
    with _trail(args) as trail:
        rows = trail.usage_by_run(args.run) if args.by == "run" else trail.usage_by_actor(args.run)
    if args.json:
        for u in rows:
            print_json({"by": args.by, **u.__dict__})
        return 0
    print(f"{args.by:<32} {'calls':>6} {'failed':>6} {'prompt':>9} {'completion':>10} {'cost USD':>10} {'LLM s':>8}")
    for u in rows:
        print(_usage_line(u))
    if len(rows) > 1:
        print(_usage_line(_total(rows)))
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    """Exit 1 when a recorded request was edited after it was written (its text no longer
    hashes to the hash stored with it): an audit trail that can be rewritten silently is not one."""
    with _trail(args) as trail:
        run = args.run
        checked, edited = 0, []
        for rec in trail.store.read_all():
            e = rec.event
            if e.type_name != "LlmRequested" or (run is not None and e.run_id != run):
                continue
            checked += 1
            actual = LlmRequest.from_recorded(e).hash()
            if actual != e.request_hash:
                edited.append(f"EDITED run {e.run_id} {e.stream_id}@{e.version} (position {rec.position}): "
                              f"LLM call {e.call_index}'s text hashes to {actual[:12]}, stored {e.request_hash[:12]}")
    if args.json:
        print_json({"checked": checked, "edited": edited})
        return 1 if edited else 0
    for line in edited:
        print(line)
    print(f"{checked} recorded request(s) checked, {len(edited)} edited")
    return 1 if edited else 0


# -- helpers --------------------------------------------------------------------------------


class _trail:
    """The store named by --store (or CHORUS_STORE_URL) and its caught-up audit trail;
    a --run it does not know is an error, not an empty answer."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args

    def __enter__(self) -> AuditTrail:
        self.store = open_store(getattr(self.args, "store", None))
        try:
            trail = AuditTrail.open(self.store)
            run = getattr(self.args, "run", None)
            if run is not None and not trail.knows_run(run):
                raise ValueError(f"unknown run {run!r}: the audit trail holds no events of it")
        except BaseException:
            self.store.close()
            raise
        return trail

    def __exit__(self, *exc: object) -> None:
        self.store.close()


def _event_line(e: AuditEvent) -> str:
    payload = json.dumps(e.payload, ensure_ascii=False, separators=(",", ":"), default=str)
    if len(payload) > 160:
        payload = payload[:157] + "..."
    when = e.timestamp.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    return f"{e.position:>8}  {when}  {e.stream_id}@{e.version}  {e.type}  {payload}"


def _event_json(e: AuditEvent) -> str:
    record = event_record(
        position=e.position, event_id=e.event_id, run_id=e.run_id, stream_id=e.stream_id, version=e.version,
        type=e.type, timestamp=e.timestamp, causation_id=e.causation_id, command_id=e.command_id, data=e.payload,
    )  # fmt: skip
    return json.dumps(record, ensure_ascii=False, default=json_default)


def _call_line(c: LlmCall) -> str:
    latency = "-" if c.latency_s is None else f"{c.latency_s:.2f}s"
    cost = "" if c.cost_usd is None else f"  ${c.cost_usd:.6f}"
    seed = "" if c.seed is None else f" seed={c.seed}"
    return (
        f"{c.position:>8}  {c.stream_id}#{c.call_index}  {c.status:<9}  {c.model or '-'}{seed}  "
        f"{c.prompt_tokens}+{c.completion_tokens} tokens  {latency}{cost}"
    )


def _usage_line(u: Usage) -> str:
    cost = "-" if u.cost_usd is None else f"{u.cost_usd:.6f}"
    return (
        f"{u.key:<32} {u.calls:>6} {u.failed:>6} {u.prompt_tokens:>9} {u.completion_tokens:>10} "
        f"{cost:>10} {u.latency_s:>8.1f}"
    )


def _total(rows: list[Usage]) -> Usage:
    priced = [u.cost_usd for u in rows if u.cost_usd is not None]
    return Usage(
        key="total",
        calls=sum(u.calls for u in rows),
        failed=sum(u.failed for u in rows),
        prompt_tokens=sum(u.prompt_tokens for u in rows),
        completion_tokens=sum(u.completion_tokens for u in rows),
        cost_usd=sum(priced) if priced else None,
        priced_calls=sum(u.priced_calls for u in rows),
        latency_s=sum(u.latency_s for u in rows),
    )
