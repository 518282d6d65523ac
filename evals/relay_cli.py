"""`python -m evals relay [--problems 0-39]`: does verification with retries beat a single shot,
by how much, and at what cost (seed 004's question), measured on HumanEval.

Each problem (evals.humaneval) is measured twice, in one run, on the same model:

    single  one Builder call on the one-item roadmap, its edits applied, nothing checked
    relay   the relay: Builder, then the Verifier (ruff, the docstring's examples as pytest
            tests, the LLM coherence check), retried with the defect capsule up to
            --max-retries times, then escalated

and the final solution.py of each is judged by the benchmark's hidden tests in the sandbox.
Both go through the same Builder and prompt, so the difference is the verification and the
retries. With both methods, the single shot is the relay's first builder turn, judged
before the verifier sees it: it is the very request a lone call would make (greedy, seed
0), so one relay measures both and the model's time is not spent twice. Every call is
recorded: each problem's turns are relay streams in a SQLite log in the output folder
(`relay:humaneval-N-STAMP`, with `:builder` and `:verifier`), so a
surprising result can be read call by call. Progress goes to stderr, one line per problem;
stdout ends with a markdown table of pass@1, mean builder turns, mean tokens and seconds
per problem, and the folder gets `report.json`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from actors.relay.builder import Builder
from evals.humaneval import (
    RUFF_IGNORE,
    Problem,
    judge,
    load_problems,
    parse_selection,
    roadmap_item,
    workspace,
)
from actors.relay.recording import RecordedEffects, builder_stream, scheduler_stream, verifier_stream
from actors.relay.run import drive_relay, plan_relay
from actors.relay.scheduler import SchedulerBehaviour
from actors.relay.verifier import COHERENCE_MODES, Verifier
from actors.relay.workspace import apply_changes
from actors.runtime.errors import UserError
from actors.runtime.llm.gateway import LlmGateway
from actors.runtime.perform import LiveEffects
from actors.runtime.shell import ActorShell
from events.base import Event
from actors.relay.events import BatonPassed, WorkspaceChanged
from events.store import EventStore

METHODS = ("single", "relay")
DEFAULT_PARAMS: dict[str, Any] = {"temperature": 0.0, "seed": 0}  # greedy, as published pass@1 figures are


@dataclass
class Outcome:
    problem: str
    method: str
    passed: bool
    turns: int
    tokens: int
    seconds: float
    why: str = ""
    run_id: str = ""


@dataclass
class Tally:
    method: str
    outcomes: list[Outcome] = field(default_factory=list)

    def row(self) -> str:
        n = len(self.outcomes) or 1
        passed = sum(o.passed for o in self.outcomes)
        return (
            f"| {self.method} | {100 * passed / n:.1f}% ({passed}/{len(self.outcomes)}) "
            f"| {sum(o.turns for o in self.outcomes) / n:.2f} "
            f"| {sum(o.tokens for o in self.outcomes) / n:.0f} "
            f"| {sum(o.seconds for o in self.outcomes) / n:.1f} |"
        )


def table(tallies: list[Tally]) -> str:
    head = "| method | pass@1 | mean turns | mean tokens | s/problem |\n|---|---|---|---|---|"
    return "\n".join([head, *(t.row() for t in tallies)])


def run_single(problem: Problem, provider: Any, store: EventStore, run_id: str, model: str, params: dict[str, Any]) -> Outcome:
    """One Builder call, its edits applied, judged."""
    started = time.monotonic()
    files = workspace(problem)
    shell = ActorShell(SchedulerBehaviour(), scheduler_stream(run_id), store, run_id=run_id).load()
    plan_relay(shell, problem.task_id, [roadmap_item(problem)], max_retries=0, files=files)
    builder = Builder(model, params)
    effects = RecordedEffects(store, builder_stream(run_id), run_id, LiveEffects(LlmGateway(provider), builder.invoker()))
    built = builder.build(shell.state, effects)
    passed, why = judge(apply_changes(files, built.changes), problem)
    return Outcome(problem.task_id, "single", passed, 1, built.tokens, time.monotonic() - started, why, run_id)


def run_relay(
    problem: Problem,
    provider: Any,
    store: EventStore,
    run_id: str,
    model: str,
    params: dict[str, Any],
    *,
    max_retries: int,
    coherence: str,
) -> tuple[Outcome, Outcome]:
    """The relay on the one-item roadmap, its final workspace judged; and its first builder
    turn judged on its own, before any verification: that turn is the single shot (the same
    request `run_single` makes), so measuring both costs one relay."""
    started = time.monotonic()
    files = workspace(problem)
    shell = ActorShell(SchedulerBehaviour(), scheduler_stream(run_id), store, run_id=run_id).load()
    plan_relay(shell, problem.task_id, [roadmap_item(problem)], max_retries=max_retries, files=files)
    builder = Builder(model, params)
    verifier = Verifier(model, params, coherence=coherence, ruff_ignore=RUFF_IGNORE)  # type: ignore[arg-type]
    gateway = LlmGateway(provider)
    now = {"files": files}  # the workspace as the first turn's events change it
    first: dict[str, Any] = {}

    def seen(e: Event) -> None:
        if first:
            return
        if isinstance(e, WorkspaceChanged):
            now["files"] = apply_changes(now["files"], e.changes)
        elif isinstance(e, BatonPassed):
            first.update(files=now["files"], tokens=e.tokens, seconds=time.monotonic() - started)

    state = drive_relay(
        shell,
        builder,
        verifier,
        RecordedEffects(store, builder_stream(run_id), run_id, LiveEffects(gateway, builder.invoker())),
        RecordedEffects(store, verifier_stream(run_id), run_id, LiveEffects(gateway, verifier.invoker())),
        on_event=seen,
    )
    passed, why = judge(state.files, problem)
    turns = state.turn_number  # builder turns, numbered from 1 across the (one-item) roadmap
    relay = Outcome(problem.task_id, "relay", passed, turns, state.tokens_used, time.monotonic() - started, why, run_id)
    single_passed, single_why = judge(first.get("files", {}), problem)
    single = Outcome(
        problem.task_id, "single", single_passed, 1, first.get("tokens", 0), first.get("seconds", 0.0), single_why, run_id
    )
    return single, relay


def evaluate(
    problems: list[Problem],
    provider: Any,
    store: EventStore,
    *,
    model: str,
    params: dict[str, Any],
    max_retries: int,
    coherence: str,
    methods: tuple[str, ...] = METHODS,
    stamp: str = "",
    progress: Callable[[str], None] = lambda line: None,
) -> list[Tally]:
    """Each problem through the chosen methods; with both, `single` is the relay's first
    builder turn (see `run_relay`)."""
    tallies = {m: Tally(m) for m in methods}
    for problem in problems:
        got: list[Outcome] = []
        run_id = f"humaneval-{problem.number}" + (f"-{stamp}" if stamp else "")
        if "relay" in methods:
            single, relay = run_relay(
                problem, provider, store, run_id, model, params, max_retries=max_retries, coherence=coherence
            )
            got = [single, relay] if "single" in methods else [relay]
        else:
            got = [run_single(problem, provider, store, run_id, model, params)]
        parts = []
        for o in got:
            tallies[o.method].outcomes.append(o)
            parts.append(
                f"{o.method} {'PASS' if o.passed else 'fail'} {o.turns} turn{'s' * (o.turns != 1)} "
                f"{o.tokens} tok {o.seconds:.0f} s"
            )
        progress(f"{problem.task_id} ({problem.entry_point}): " + " | ".join(parts))
    return list(tallies.values())


# -- the command -----------------------------------------------------------------------------------


def add_parser(sub: Any) -> None:
    """`relay` under `python -m evals`."""
    r = sub.add_parser("relay", help="HumanEval pass@1: a single builder call vs the relay with retries")
    r.add_argument("--problems", default="0-39", help="a range or list of problem numbers (default 0-39)")
    r.add_argument("--max-retries", type=int, default=2, help="relay retries per problem (default 2)")
    r.add_argument(
        "--coherence",
        choices=COHERENCE_MODES,
        default="when-checks-pass",
        help="when the verifier asks the model whether the criteria are met (default: when the tests pass)",
    )
    r.add_argument("--methods", default=",".join(METHODS), help="comma-separated: single, relay (default both)")
    r.add_argument("--out", type=Path, help="folder for the log and report.json (default: a new one under the data dir)")
    r.set_defaults(func=cmd_eval_relay)


def cmd_eval_relay(args: argparse.Namespace) -> int:
    from actors.runtime.llm.providers import provider_and_server
    from actors.runtime.settings import Settings

    try:
        all_problems = load_problems()
        chosen = parse_selection(args.problems, len(all_problems))
    except ValueError as e:
        raise UserError(str(e)) from None
    if args.max_retries < 0:
        raise UserError(f"--max-retries must be 0 or more, not {args.max_retries}")
    methods = tuple(m.strip() for m in args.methods.split(",") if m.strip())
    unknown = [m for m in methods if m not in METHODS]
    if unknown or not methods:
        raise UserError(f"--methods: unknown {', '.join(unknown) or '(none given)'}; choose from {', '.join(METHODS)}")
    settings = Settings.from_env()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = (args.out or settings.data_dir / "eval" / f"relay-{stamp}").expanduser()
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is not a folder")
    out.mkdir(parents=True, exist_ok=True)
    provider, server = provider_and_server(settings)
    print(
        f"HumanEval problems {args.problems} ({len(chosen)}) on {settings.llm_model}; "
        f"methods {', '.join(methods)}; log {out / 'humaneval.db'}",
        file=sys.stderr,
        flush=True,
    )
    try:
        with EventStore(f"sqlite:///{out / 'humaneval.db'}") as store:
            tallies = evaluate(
                [all_problems[n] for n in chosen],
                provider,
                store,
                model=settings.llm_model,
                params=dict(DEFAULT_PARAMS),
                max_retries=args.max_retries,
                coherence=args.coherence,
                methods=methods,
                stamp=stamp,
                progress=lambda line: print(line, file=sys.stderr, flush=True),
            )
    finally:
        if server is not None:
            server.stop()
    report = {
        "problems": args.problems,
        "model": settings.llm_model,
        "max_retries": args.max_retries,
        "coherence": args.coherence,
        "params": DEFAULT_PARAMS,
        "outcomes": [asdict(o) for t in tallies for o in t.outcomes],
        "table": table(tallies),
    }
    (out / "report.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(table(tallies))
    return 0
