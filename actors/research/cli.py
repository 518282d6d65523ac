"""`chorus research`: run seed 000's research flow, list past research, print a past report.

    chorus research "OBJECTIVE" --root PATH_OR_GIT_URL   index, plan, research, report
    chorus research --history [--status S] [--json]     past research, newest first
    chorus research --show RUN [--json]                 a past run's full report, again

Reports and history come from the research-history view (actors/research/history.py),
caught up from the log first; nothing is re-run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from actors.index.repository import is_url
from actors.runtime.cli_dialect import add_json, add_root, print_json
from actors.runtime.client import Client
from actors.runtime.console import follow_run, open_store
from actors.runtime.errors import UserError
from events.runs import DEFAULT_MAX_LLM_CALLS, Budget
from actors.research.history import ResearchHistory

RESEARCHER = "researcher"  # the run kind (actors.research.kind.ResearchRun)


def add_parsers(sub: Any) -> None:
    p = sub.add_parser("research", help="research a repository and print a markdown report")
    p.add_argument("objective", nargs="?", help="what to find out")
    add_root(p, "a local folder or a git URL to index and research", old="--repo", dest="repo", metavar="DIR_OR_URL")
    p.add_argument("--history", action="store_true", help="list past research (status, objective)")
    p.add_argument("--status", help="with --history: only PENDING, INDEXING, RUNNING, COMPLETED or FAILED")
    p.add_argument("--limit", type=int, default=20, metavar="N", help="with --history: at most N rows (default 20)")
    p.add_argument("--show", metavar="RUN", help="print the full report of a past run")
    add_json(p, "with --history, one row per line; with --show, the report as one object")
    p.add_argument("--max-iterations", type=int, default=6, help="ReAct iterations per plan step (default 6)")
    p.add_argument(
        "--max-llm-calls", type=int, default=DEFAULT_MAX_LLM_CALLS,
        help="LLM calls the whole run may make (plan, steps, searches, report; default %(default)s)",
    )  # fmt: skip
    p.add_argument("--max-tokens", type=int, help="tokens the whole run may use")
    p.add_argument("--max-seconds", type=float, help="wall-time budget")
    p.add_argument("--quiet", "-q", action="store_true", help="print only the report")
    p.set_defaults(func=cmd_research)


def cmd_research(args: argparse.Namespace) -> int:
    if args.history:
        return _history(args)
    if args.show:
        return _show(args.show, args.json)
    if not args.objective or not args.objective.strip():
        raise UserError("research needs an OBJECTIVE (or --history, or --show RUN_ID)")
    if args.repo is not None and not args.repo.strip():
        raise UserError("--root is empty")
    if args.repo and not is_url(args.repo) and not Path(args.repo).expanduser().is_dir():
        raise UserError(f"repository path {args.repo} does not exist or is not a folder")
    budget = Budget(max_llm_calls=args.max_llm_calls, max_tokens=args.max_tokens, max_wall_seconds=args.max_seconds)
    with Client() as client:
        handle = client.submit(
            args.objective, kind=RESEARCHER, repo=args.repo, max_iterations=args.max_iterations, budget=budget
        )
        print(f"run {handle.run_id}", flush=True)
        return follow_run(handle, args.quiet)


def _history(args: argparse.Namespace) -> int:
    store = open_store()
    try:
        rows = ResearchHistory.open(store).list(status=args.status, limit=args.limit)
    finally:
        store.close()
    if args.json:
        for r in rows:
            print_json({"id": r.id, "run_id": r.run_id, "created_at": r.created_at, "status": r.status,
                        "objective": r.objective, "repo_url": r.repo_url,
                        "error": r.error.line() if r.error else None})  # fmt: skip
        return 0
    if not rows:
        print("no research yet", file=sys.stderr)
        return 0
    print(f"{'ID':>4}  {'RUN':<12}  {'CREATED':<16}  {'STATUS':<9}  OBJECTIVE")
    for r in rows:
        repo = f"  [{r.repo_url}]" if r.repo_url else ""
        when = r.created_at.strftime("%Y-%m-%d %H:%M")
        error = f"  ({r.error.line()})" if r.error and r.status == "FAILED" else ""
        print(f"{r.id:>4}  {r.run_id}  {when}  {r.status:<9}  {r.objective}{repo}{error}")
    return 0


def _show(run_id: str, as_json: bool = False) -> int:
    store = open_store()
    try:
        history = ResearchHistory.open(store)
        record = history.get(run_id) or (history.get(int(run_id)) if run_id.isdigit() else None)
    finally:
        store.close()
    if record is None:
        raise UserError(f"no research run {run_id!r} (see chorus research --history)")
    if as_json:
        print_json({"run_id": record.run_id, "status": record.status, "report": record.final_report,
                    "error": record.error.line() if record.error else None})  # fmt: skip
        return 0 if record.final_report else 1
    if record.final_report:
        print(record.final_report.rstrip())
        return 0
    why = f": {record.error.line()}" if record.error else ""
    print(f"chorus: research {record.run_id} has no report ({record.status}{why})", file=sys.stderr)
    return 1
