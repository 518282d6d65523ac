"""The durable-function layer against the decide/evolve path it is built on, on the same effects.

    .venv/bin/python tests/bench/bench_durable.py --store sqlite,memory   # ~1.5 min
    .venv/bin/python tests/bench/bench_durable.py --store memory --calls 200 --rounds 7   # SQLite alone is the default
    .venv/bin/python tests/bench/bench_durable.py --profile            # cProfile of both live paths

Two ways to make the same N LLM calls, measured turn about in one run (one call each, order
alternating; `bench_store.interleaved`), on one store of the chosen kind (a SQLite file in a
temporary folder, or `memory://`), through the same gateway (`LlmGateway` over a
`ScriptedProvider`: instant replies, a fresh one per run) and `LiveEffects` (no ledger):

- **durable**: an `@agent` function, `many_calls`, that calls `ctx.llm(...)` N times and
  returns the last reply, run by `run_function` over an `ActorShell(FunctionBehaviour)` with
  `LiveDurable` (what `actors.testing.run_agent` and the Ray `function_agent` actor do, less
  the run lifecycle stream);
- **decide/evolve** (the baseline): `CallsBehaviour`, a minimal behaviour whose
  `next_effect` asks for the same N calls (same model, messages and params, so the same
  request hashes), driven by `perform.drive` with the same `LiveEffects`.

Both streams record the same events: `FunctionStarted`, then `LlmRequested` + `LlmCompleted`
per call (one command each, key `call:N` / `llm:N`), then `FunctionCompleted`; the shell's
default snapshot every 100 versions on both.

1. **Live**: one op = a whole N-call run on a fresh stream. Per-call time = round total /
   (calls per round x N); ratio = durable / decide-evolve per round (> 1: the layer costs more).
2. **Replay**: one 1,000-call run of each kind (`--replay-calls`) recorded once, then
   re-executed from its log as `chorus replay` does it, minus the run-kind lookup: the stream
   read from the store, then `function_agent.replay_function_stream` (durable) against
   `replay.rerun.replay_stream` + `drive` + `ReplayEffects` (decide/evolve), each checked
   identical to its recording on every call. Ratio = durable / decide-evolve time.

Tables give the median of the per-round ratios and their range, on wall time and on this
process's CPU time (`time.process_time`: time spent waiting for a core on a shared machine
does not count in it).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import itertools
import pstats
import sys
import tempfile
import time
from itertools import groupby
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from pydantic import Field

from actors.runtime.behaviour import Behaviour, Command
from actors.runtime.durable import (
    DEFAULT_PARAMS,
    Finish,
    FunctionBehaviour,
    LiveDurable,
    StartFunction,
    agent,
    load_agent,
    run_function,
)
from actors.runtime.effects import CallLlm, LlmReturned
from actors.runtime.function_agent import replay_function_stream
from actors.runtime.llm.gateway import LlmGateway
from actors.testing.model import ScriptedProvider
from actors.runtime.llm.types import LlmRequest
from actors.runtime.perform import LiveEffects, drive
from actors.runtime.replay.rerun import replay_stream
from actors.runtime.shell import ActorShell
from events.base import Event, State
from events.durable import FunctionCompleted, FunctionStarted
from events.effects import LlmCompleted
from events.store import EventStore
from tests.bench.bench_store import fresh_url, machine, med, spread, table

AGENT_PATH = "tests.bench.bench_durable:many_calls"  # what the durable run records and replay imports
MODEL = "scripted"
REPLY = "ok, noted."


def prompt(i: int, goal: str) -> str:
    return f"Step {i} of the task: {goal}. Say what to do next."


def calls_in(goal: str) -> int:
    return int(goal.split()[0])


# -- the durable side: an agent function ------------------------------------------------------


@agent
def many_calls(ctx: Any, goal: str) -> str:
    last = ""
    for i in range(1, calls_in(goal) + 1):
        last = ctx.llm(prompt(i, goal))
    return last


# -- the baseline: a minimal decide/evolve behaviour making the same calls ---------------------


class CallsState(State):
    status: str = "new"
    goal: str = ""
    model: str = ""
    params: dict[str, Any] = Field(default_factory=dict)
    calls: int = 0
    last: str = ""


class CallsBehaviour(Behaviour[CallsState]):
    """`next_effect` asks for call 1..N with the request `ctx.llm(prompt(i, goal))` builds."""

    name = "calls"
    state_type = CallsState

    def next_effect(self, state: CallsState) -> CallLlm | None:
        if state.status != "running" or state.calls >= calls_in(state.goal):
            return None
        i = state.calls + 1
        request = LlmRequest(
            model=state.model, messages=[{"role": "user", "content": prompt(i, state.goal)}], params={**state.params}
        )
        return CallLlm(request=request, call_index=i)

    def decide(self, state: CallsState, command: Command) -> list[Event]:
        if isinstance(command, StartFunction):
            return [] if state.status != "new" else [
                FunctionStarted(agent=command.agent, goal=command.goal, model=command.model, params=command.params)
            ]  # fmt: skip
        if isinstance(command, LlmReturned):
            return list(command.events)
        if isinstance(command, Finish):
            return [FunctionCompleted(result=command.result)]
        raise TypeError(type(command).__name__)

    def evolve(self, state: CallsState, event: Event) -> CallsState:
        d: Any = event
        if isinstance(event, FunctionStarted):
            return state.model_copy(update={"status": "running", "goal": d.goal, "model": d.model, "params": d.params})
        if isinstance(event, FunctionCompleted):
            return state.model_copy(update={"status": "completed"})
        index = getattr(event, "call_index", None)
        if index is None:
            return state
        update: dict[str, Any] = {"calls": max(state.calls, index)}
        if isinstance(event, LlmCompleted):
            update["last"] = d.content
        return state.model_copy(update=update)


# -- one live run of each ----------------------------------------------------------------------


_ids = itertools.count(1)


def live_effects() -> LiveEffects:
    def no_tools(name: str, args: dict[str, Any]) -> str:
        raise KeyError(name)

    return LiveEffects(LlmGateway(ScriptedProvider([REPLY])), no_tools)


def start(n: int) -> StartFunction:
    return StartFunction(key="start", agent=AGENT_PATH, goal=f"{n} calls", model=MODEL, params=dict(DEFAULT_PARAMS))


def durable_run(store: EventStore, n: int) -> str:
    run_id = f"d{next(_ids)}"
    shell = ActorShell(FunctionBehaviour(), f"function:{run_id}", store, run_id=run_id).load()
    shell.handle(start(n))
    outcome = run_function(
        shell, load_agent(AGENT_PATH), LiveDurable(live_effects(), store, run_id), store.read_stream(shell.stream_id)
    )
    assert outcome.status == "completed" and shell.state.calls == n, outcome
    return run_id


def baseline_run(store: EventStore, n: int) -> str:
    run_id = f"b{next(_ids)}"
    shell = ActorShell(CallsBehaviour(), f"agent:{run_id}", store, run_id=run_id).load()
    shell.handle(start(n))
    drive(shell, live_effects())
    shell.handle(Finish(key="finish", result=shell.state.last), causation_id=shell.last_event_id)
    assert shell.state.status == "completed" and shell.state.calls == n
    return run_id


# -- replay of each ----------------------------------------------------------------------------


def replay_durable(store: EventStore, run_id: str) -> int:
    stream = f"function:{run_id}"
    original = store.read_stream(stream)
    replayed, divergence = replay_function_stream(stream, original, run_id)
    if divergence is not None:
        raise SystemExit(f"durable replay diverged: {divergence.describe()}")
    return len(replayed)


def replay_baseline(store: EventStore, run_id: str) -> int:
    stream = f"agent:{run_id}"
    original = store.read_stream(stream)

    def begin(shell: ActorShell[Any]) -> None:  # the recorded start, as replay_function_stream does
        for key, group in groupby(original[:1], key=lambda e: e.command_id):
            events = [type(e).model_validate({**e.payload(), "timestamp": e.timestamp}) for e in group]
            shell.record(events, key, causation_id=events[0].causation_id)

    def execute(shell: ActorShell[Any], effects: Any) -> None:
        drive(shell, effects)
        shell.handle(Finish(key="finish", result=shell.state.last), causation_id=shell.last_event_id)

    replayed, divergence = replay_stream(CallsBehaviour(), stream, original, run_id, begin=begin, execute=execute)
    if divergence is not None:
        raise SystemExit(f"decide/evolve replay diverged: {divergence.describe()}")
    return len(replayed)


def same_events(store: EventStore, durable_id: str, baseline_id: str) -> None:
    """Both runs recorded the same events (types, call indexes, request hashes, contents)."""

    def shape(stream: str) -> list[tuple[Any, ...]]:
        return [
            (e.type_name, getattr(e, "call_index", None), getattr(e, "request_hash", None),
             getattr(e, "content", None), e.command_id is not None)
            for e in store.read_stream(stream)
        ]  # fmt: skip

    a, b = shape(f"function:{durable_id}"), shape(f"agent:{baseline_id}")
    assert a == b, (a[:4], b[:4])


# -- the bench ---------------------------------------------------------------------------------


def turn_about(ops: dict[str, Any], per_round: int, rounds: int) -> dict[str, dict[str, list[float]]]:
    """`bench_store.interleaved`, summed per round, on two clocks: wall seconds and this
    process's CPU seconds (which a busy neighbour inflates less: time spent descheduled
    does not count)."""
    keys = list(ops)
    out: dict[str, dict[str, list[float]]] = {c: {k: [] for k in keys} for c in ("wall", "cpu")}
    for _ in range(rounds):
        wall = dict.fromkeys(keys, 0.0)
        cpu = dict.fromkeys(keys, 0.0)
        for i in range(per_round):
            for k in keys if i % 2 == 0 else keys[::-1]:
                w0, c0 = time.perf_counter(), time.process_time()
                ops[k]()
                wall[k] += time.perf_counter() - w0
                cpu[k] += time.process_time() - c0
        for k in keys:
            out["wall"][k].append(wall[k])
            out["cpu"][k].append(cpu[k])
    return out


def ratios(secs: dict[str, list[float]]) -> list[float]:
    return [x / y for x, y in zip(secs["durable"], secs["decide/evolve"], strict=True)]


def bench(backend: str, args: argparse.Namespace, tmpdir: str) -> tuple[list[str], list[str]]:
    with fresh_url(backend, tmpdir, "durable") as url:
        store = EventStore(url)
        try:
            n = args.calls
            same_events(store, durable_run(store, n), baseline_run(store, n))  # warm-up, and the check
            ops = {"durable": lambda: durable_run(store, n), "decide/evolve": lambda: baseline_run(store, n)}
            both = turn_about(ops, args.per_round, args.rounds)
            d, b = both["wall"]["durable"], both["wall"]["decide/evolve"]
            wall_r, cpu_r = ratios(both["wall"]), ratios(both["cpu"])
            per_call = lambda xs: 1e6 * med(xs) / (args.per_round * n)
            live = [
                backend, f"{n:,}", f"{per_call(d):,.0f}", f"{per_call(b):,.0f}",
                f"**{med(wall_r):.2f}**", spread(wall_r), f"**{med(cpu_r):.2f}**", spread(cpu_r),
            ]  # fmt: skip
            print(f"  {backend} live: durable {per_call(d):,.0f} µs/call, decide/evolve {per_call(b):,.0f}, "
                  f"ratio {med(wall_r):.2f} (CPU {med(cpu_r):.2f})", flush=True)  # fmt: skip

            m = args.replay_calls
            dur_id, base_id = durable_run(store, m), baseline_run(store, m)
            same_events(store, dur_id, base_id)
            events = replay_durable(store, dur_id)
            assert replay_baseline(store, base_id) == events
            rops = {"durable": lambda: replay_durable(store, dur_id), "decide/evolve": lambda: replay_baseline(store, base_id)}
            rboth = turn_about(rops, 2, args.replay_rounds)
            rd, rb = rboth["wall"]["durable"], rboth["wall"]["decide/evolve"]
            rwall, rcpu = ratios(rboth["wall"]), ratios(rboth["cpu"])
            replay = [
                backend, f"{m:,}", f"{events:,}", f"{med(rd) / 2:.2f}", f"{2 * events / med(rd):,.0f}",
                f"{med(rb) / 2:.2f}", f"{2 * events / med(rb):,.0f}", f"**{med(rwall):.2f}**", spread(rwall),
                f"**{med(rcpu):.2f}**", spread(rcpu),
            ]  # fmt: skip
            print(f"  {backend} replay: durable {med(rd) / 2:.2f} s, decide/evolve {med(rb) / 2:.2f} s, "
                  f"ratio {med(rwall):.2f} (CPU {med(rcpu):.2f})", flush=True)  # fmt: skip
            return live, replay
        finally:
            store.close()


def profile(backend: str, n: int, tmpdir: str) -> None:
    with fresh_url(backend, tmpdir, "profile") as url:
        store = EventStore(url)
        try:
            durable_run(store, 10), baseline_run(store, 10)  # imports, first-call costs
            for label, run in (("durable", durable_run), ("decide/evolve", baseline_run)):
                prof = cProfile.Profile()
                prof.enable()
                run(store, n)
                prof.disable()
                print(f"\n=== {label}: one {n}-call run on {backend} ===")
                stats = pstats.Stats(prof).strip_dirs()
                stats.sort_stats("tottime").print_stats(18)
                stats.sort_stats("cumulative").print_stats(30)
        finally:
            store.close()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--store", default="sqlite", help="sqlite, memory, or both: sqlite,memory")
    p.add_argument("--calls", type=int, default=100, help="LLM calls per live run")
    p.add_argument("--rounds", type=int, default=15, help="interleaved rounds of the live runs")
    p.add_argument("--per-round", type=int, default=4, help="runs of each kind per round (order alternating)")
    p.add_argument("--replay-calls", type=int, default=1000, help="LLM calls of the replayed run")
    p.add_argument("--replay-rounds", type=int, default=11)
    p.add_argument("--profile", action="store_true", help="cProfile one live run of each instead")
    args = p.parse_args(argv)
    backends = [b.strip() for b in args.store.split(",") if b.strip()]
    started = time.perf_counter()
    print(machine(), "\n", flush=True)
    with tempfile.TemporaryDirectory(prefix="chorus-bench-durable-") as tmpdir:
        if args.profile:
            for backend in backends:
                profile(backend, args.calls, tmpdir)
            return
        lives, replays = [], []
        for backend in backends:
            live, replay = bench(backend, args, tmpdir)
            lives.append(live)
            replays.append(replay)
    table(
        f"Live: per LLM call, durable function vs decide/evolve ({args.rounds} rounds x {args.per_round} runs each)",
        ["store", "calls/run", "durable µs/call", "decide/evolve µs/call", "ratio (wall)", "range", "ratio (CPU)", "range"],
        lives,
    )
    table(
        f"Replay of one run, durable function vs decide/evolve ({args.replay_rounds} rounds x 2 each)",
        ["store", "LLM calls", "events", "durable s", "durable ev/s", "decide/evolve s", "decide/evolve ev/s",
         "ratio (wall)", "range", "ratio (CPU)", "range"],
        replays,
    )
    print(f"total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
