"""Bytes stored per agent step: Chorus's event log against LangGraph's SQLite checkpointer.

    .venv/bin/python -m tests.bench.bench_bytes                 # 10, 100, 1,000 steps (~3 min)
    .venv/bin/python -m tests.bench.bench_bytes --sizes 10,100  # quicker

The same loop on both sides: a scripted model that never answers before step N reads one
line of a file per step (thought and line number vary, so the agent's repeat rules let it
run), the real `read_file` tool returns that line, and step N+1 answers.

- Chorus: the real ReAct agent behaviour driven in-process (no Ray) the way a run is
  recorded (`ActorShell` + `drive` + `LiveEffects` + `ScriptedProvider`, as in
  tests/support/recording.py), into a fresh SQLite file per size, snapshot every 100
  events (the shell's default).
- LangGraph: a `StateGraph` whose state is the message list a LangGraph ReAct agent keeps
  (`add_messages`, as `MessagesState` and `create_react_agent` use), an "agent" node that
  appends the scripted assistant step (thought, tool call, token usage) and a "tools" node
  that appends the `read_file` observation, checkpointed by `SqliteSaver` into a fresh SQLite
  file; and the same graph with LangGraph's beta `DeltaChannel` for the messages (each
  node's writes, a full copy every 100 updates), its most compact mode. Both modes are in
  the main table at every size.

The agent's state is capped on the Chorus side (the last `HISTORY_KEPT` steps; the prompt
condenses at most `MAX_CONDENSED`), while LangGraph's state is the whole message list; the
report prints both, so the tables say what LangGraph keeps that Chorus does not.

LangGraph is not a project dependency: its half runs in its own virtual environment,
tests/bench/.venv-langgraph (created and filled from PyPI on first use, gitignored), as
`python -m tests.bench.bench_bytes --side langgraph --json OUT`; the halves exchange JSON.

Sizes are measured on disk after a WAL checkpoint (the SQLite file as it stays), and as the
sum of stored blob bytes in each side's tables. Bytes are deterministic up to ids and
timestamps, so one run is enough; the ratio is LangGraph bytes / Chorus bytes (> 1: we
store less).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
LG_VENV = REPO / "tests" / "bench" / ".venv-langgraph"
LG_PACKAGES = ["langgraph", "langgraph-checkpoint-sqlite"]

FILE = "journal.txt"
GOAL = "Which line of journal.txt records the marker?"


# -- the shared loop ----------------------------------------------------------------------


def make_repo(root: Path, lines: int) -> None:
    text = "\n".join(
        f"{i}: the synth observed its sensory bundle and chose action surface {i % 7}"
        for i in range(1, lines + 1)
    )
    (root / FILE).write_text(text + "\n")


def scripted_step(n: int, total: int) -> tuple[str, str, dict[str, Any]]:
    """(thought, action, args) the model gives at step n of a run that answers after `total`."""
    if n > total:
        return (
            f"Read {total} lines; none records it.",
            "answer",
            {"answer": f"No line of {FILE} records the marker."},
        )
    return (
        f"Line {n - 1} did not show the marker; read line {n}.",
        "read_file",
        {"path": FILE, "start_line": n, "end_line": n},
    )


def db_bytes(path: str) -> int:
    """The file as it stays: WAL folded into the database first."""
    with sqlite3.connect(path) as c:
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    wal = path + "-wal"
    return os.path.getsize(path) + (os.path.getsize(wal) if os.path.exists(wal) else 0)


def blob_bytes(path: str, sql: str) -> tuple[int, int]:
    with sqlite3.connect(path) as c:
        count, total = c.execute(sql).fetchone()
    return int(count or 0), int(total or 0)


# -- Chorus ---------------------------------------------------------------------------------


def run_chorus(steps: int, workdir: Path, snapshot_every: int = 100) -> dict[str, Any]:
    from actors.agent.react import ReactAgent, StartAgent
    from actors.agent.actor import agent_stream
    from actors.runtime.perform import LiveEffects, drive, local_invoker
    from actors.runtime.llm.gateway import LlmGateway
    from actors.testing.model import ScriptedProvider
    from actors.runtime.run import (
        Complete,
        Fail,
        RunLifecycle,
        Start,
        Submit,
        run_stream,
    )
    from actors.runtime.shell import ActorShell
    from actors.tools.files import ReadFile, SearchFiles
    from actors.agent.events import ToolSpec
    from events.store import EventStore
    from tests.support.fake_llm import step_of

    root = workdir / "repo"
    root.mkdir()
    make_repo(root, steps + 10)
    path = str(workdir / "chorus.db")

    def model(request: Any) -> str:
        thought, action, args = scripted_step(step_of(request), steps)
        return json.dumps({"thought": thought, "action": action, "args": args})

    started = time.perf_counter()
    store = EventStore(f"sqlite:///{path}")
    run_id = uuid.uuid4().hex[:12]

    def shell(behaviour: Any, stream: str) -> Any:
        return ActorShell(
            behaviour, stream, store, run_id=run_id, snapshot_every=snapshot_every
        ).load()

    run = shell(RunLifecycle(), run_stream(run_id))
    run.handle(Submit(key="submit", goal=GOAL))
    agent = shell(ReactAgent(), agent_stream(run_id))
    tools = {
        "search_files": SearchFiles(root=str(root)),
        "read_file": ReadFile(root=str(root)),
    }
    specs = [
        ToolSpec(name=n, signature=t.signature(), description=t.description)
        for n, t in tools.items()
    ]
    agent.handle(
        StartAgent(
            key="start",
            goal=GOAL,
            root=str(root),
            tools=specs,
            model="m",
            max_iterations=steps + 1,
        ),
        causation_id=run.last_event_id,
    )
    run.handle(
        Start(key="start", lead_stream=agent.stream_id),
        causation_id=agent.last_event_id,
    )
    state = drive(
        agent, LiveEffects(LlmGateway(ScriptedProvider(model)), local_invoker(tools))
    )
    if state.status == "completed":
        run.handle(
            Complete(key="finish", result=state.answer),
            causation_id=agent.last_event_id,
        )
    else:
        run.handle(
            Fail(key="finish", error=state.error), causation_id=agent.last_event_id
        )
    store.close()
    seconds = time.perf_counter() - started
    if state.status != "completed" or state.tool_calls != steps:
        raise SystemExit(
            f"chorus run ended early: {state.status} after {state.tool_calls} tool calls, {state.error}"
        )

    events, event_bytes = blob_bytes(
        path, "SELECT count(*), sum(length(state)) FROM chorus_events"
    )
    snaps, snap_bytes = blob_bytes(
        path, "SELECT count(*), sum(length(state)) FROM stored_snapshots"
    )
    with sqlite3.connect(path) as c:
        by_type = {
            t: [int(n), int(b)]
            for t, n, b in c.execute(
                "SELECT topic, count(*), sum(length(state)) FROM chorus_events GROUP BY topic"
            )
        }
    # The prompt text the requests record (what a reader gets back), whatever its stored form.
    prompt = 0
    with EventStore(f"sqlite:///{path}") as reader:
        for r in reader.read_all(types=["LlmRequested"]):
            prompt += sum(len(m.get("content", "").encode()) for m in r.event.messages)  # type: ignore[attr-defined]
    return {
        "steps": steps,
        "seconds": seconds,
        "file": db_bytes(path),
        "payload": event_bytes + snap_bytes,
        "events": events,
        "event_bytes": event_bytes,
        "snapshots": snaps,
        "snapshot_bytes": snap_bytes,
        "prompt_text_bytes": prompt,
        "by_type": by_type,
        "state_steps": len(state.history),  # steps the agent's state still holds (capped)
        "steps_dropped": state.steps_dropped,
    }


# -- LangGraph (runs in its own venv) ---------------------------------------------------------


def run_langgraph(steps: int, workdir: Path, delta: bool = False) -> dict[str, Any]:
    from typing import Annotated, TypedDict

    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, StateGraph
    from langgraph.graph.message import add_messages

    from actors.tools.files import ReadFile

    # Functional TypedDict syntax: the class syntax would leave string annotations here.
    if delta:
        from langgraph.channels.delta import DeltaChannel
        from langgraph.graph.message import _messages_delta_reducer

        State = TypedDict(
            "State",
            {"messages": Annotated[list, DeltaChannel(_messages_delta_reducer)]},
        )
    else:  # what MessagesState is
        State = TypedDict("State", {"messages": Annotated[list, add_messages]})  # type: ignore[misc]

    root = workdir / "repo"
    root.mkdir()
    make_repo(root, steps + 10)
    read_file = ReadFile(root=str(root))
    path = str(workdir / "langgraph.db")

    # Nodes take the graph state; no annotation, since LangGraph evaluates it as a schema.
    def agent(state) -> dict[str, Any]:  # type: ignore[no-untyped-def]
        n = 1 + sum(1 for m in state["messages"] if isinstance(m, AIMessage))
        thought, action, args = scripted_step(n, steps)
        # What a chat model integration returns: the id, token usage and finish reason.
        prompt_tokens = sum(len(str(m.content).split()) for m in state["messages"])
        completion = json.dumps({"thought": thought, "action": action, "args": args})
        meta = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "usage_metadata": {
                "input_tokens": prompt_tokens,
                "output_tokens": len(completion.split()),
                "total_tokens": prompt_tokens + len(completion.split()),
            },
            "response_metadata": {
                "model_name": "m",
                "finish_reason": "stop" if action == "answer" else "tool_calls",
            },
        }
        if action == "answer":
            return {
                "messages": [AIMessage(content=f"{thought} {args['answer']}", **meta)]
            }
        call = {
            "name": action,
            "args": args,
            "id": f"call_{uuid.uuid4().hex[:24]}",
            "type": "tool_call",
        }
        return {"messages": [AIMessage(content=thought, tool_calls=[call], **meta)]}

    def tools(state) -> dict[str, Any]:  # type: ignore[no-untyped-def]
        call = state["messages"][-1].tool_calls[0]
        output = read_file.execute(**call["args"])
        return {
            "messages": [
                ToolMessage(
                    content=output,
                    name=call["name"],
                    tool_call_id=call["id"],
                    id=str(uuid.uuid4()),
                )
            ]
        }

    def route(state) -> str:  # type: ignore[no-untyped-def]
        return "tools" if state["messages"][-1].tool_calls else END

    graph = StateGraph(State)
    graph.add_node("agent", agent)
    graph.add_node("tools", tools)
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", route, ["tools", END])
    graph.add_edge("tools", "agent")

    started = time.perf_counter()
    conn = sqlite3.connect(path, check_same_thread=False)
    app = graph.compile(checkpointer=SqliteSaver(conn))
    final = app.invoke(
        {"messages": [HumanMessage(content=GOAL, id=str(uuid.uuid4()))]},
        {
            "configurable": {"thread_id": uuid.uuid4().hex[:12]},
            "recursion_limit": 2 * steps + 10,
        },
    )
    conn.close()
    seconds = time.perf_counter() - started
    reads = sum(1 for m in final["messages"] if isinstance(m, ToolMessage))
    if reads != steps:
        raise SystemExit(f"langgraph run made {reads} tool calls, not {steps}")

    cps, cp_bytes = blob_bytes(
        path,
        "SELECT count(*), sum(length(checkpoint) + length(metadata)) FROM checkpoints",
    )
    writes, write_bytes = blob_bytes(
        path, "SELECT count(*), sum(length(value)) FROM writes"
    )
    return {
        "steps": steps,
        "seconds": seconds,
        "file": db_bytes(path),
        "payload": cp_bytes + write_bytes,
        "checkpoints": cps,
        "checkpoint_bytes": cp_bytes,
        "writes": writes,
        "write_bytes": write_bytes,
        "state_messages": len(final["messages"]),  # the whole conversation, uncapped
    }


def langgraph_side(sizes: list[int], out: str) -> None:
    from importlib import metadata

    result: dict[str, Any] = {
        "versions": {
            p: metadata.version(p)
            for p in (
                "langgraph",
                "langgraph-checkpoint",
                "langgraph-checkpoint-sqlite",
                "langchain-core",
                "ormsgpack",
            )
        },
        "python": platform.python_version(),
        "full": {},
        "delta": {},
    }
    for delta, key in ((False, "full"), (True, "delta")):
        for n in sizes:
            with tempfile.TemporaryDirectory(prefix="chorus-bench-lg-") as d:
                try:
                    result[key][str(n)] = run_langgraph(n, Path(d), delta=delta)
                except ImportError as e:  # DeltaChannel is beta: it may move or go
                    result[f"{key}_error"] = str(e)
                    break
            print(
                f"  langgraph{' (DeltaChannel)' if delta else ''} {n} steps: {result[key][str(n)]['seconds']:.1f} s",
                flush=True,
            )
    Path(out).write_text(json.dumps(result))


def ensure_langgraph_venv() -> Path:
    python = LG_VENV / "bin" / "python"
    if not python.exists():
        print(
            f"creating {LG_VENV.relative_to(REPO)} (pip install {' '.join(LG_PACKAGES)})",
            flush=True,
        )
        base = getattr(sys, "_base_executable", None) or "python3"
        subprocess.run([base, "-m", "venv", str(LG_VENV)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", *LG_PACKAGES], check=True
        )
    return python


# -- report -----------------------------------------------------------------------------------


def kb(x: float) -> str:
    return f"{x / 1000:,.1f}"


def table(header: list[str], rows: list[list[Any]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out) + "\n"


def report(
    sizes: list[int], ours: dict[int, dict[str, Any]], lg: dict[str, Any]
) -> str:
    full = {int(k): v for k, v in lg["full"].items()}
    delta = {int(k): v for k, v in lg["delta"].items()}
    parts = []

    def ratio(theirs: dict[str, Any] | None, o: dict[str, Any], key: str, bold: bool = False) -> str:
        if not theirs:
            return "-"
        r = f"{theirs[key] / o[key]:.2f}"
        return f"**{r}**" if bold else r

    def per_step(d: dict[str, Any] | None, key: str, n: int) -> str:
        return kb(d[key] / n) if d else "-"

    rows = []
    for n in sizes:
        o, g, d = ours[n], full[n], delta.get(n)
        rows.append(
            [
                f"{n:,}",
                kb(o["file"] / n),
                kb(g["file"] / n),
                ratio(g, o, "file", bold=True),
                per_step(d, "file", n),
                ratio(d, o, "file", bold=True),
                kb(o["payload"] / n),
                kb(g["payload"] / n),
                ratio(g, o, "payload"),
                per_step(d, "payload", n),
                ratio(d, o, "payload"),
            ]
        )
    parts.append(
        "Bytes per step (total / steps), kB; ratio = LangGraph / Chorus (> 1: Chorus stores less;"
        " < 1: Chorus stores more)\n"
    )
    parts.append(
        table(
            [
                "steps",
                "Chorus file kB/step",
                "LangGraph default file kB/step",
                "ratio",
                "LangGraph DeltaChannel file kB/step",
                "ratio",
                "Chorus stored kB/step",
                "LangGraph default stored kB/step",
                "ratio",
                "LangGraph DeltaChannel stored kB/step",
                "ratio",
            ],
            rows,
        )
    )

    rows = []
    for a, b in itertools.pairwise(sizes):
        def marginal(d: dict[int, dict[str, Any]], key: str, a: int = a, b: int = b) -> float | None:
            return (d[b][key] - d[a][key]) / (b - a) if a in d and b in d else None

        mo, mg, md = marginal(ours, "file"), marginal(full, "file"), marginal(delta, "file")
        po, pg, pd = marginal(ours, "payload"), marginal(full, "payload"), marginal(delta, "payload")
        rows.append(
            [
                f"{a:,} → {b:,}",
                kb(mo),
                kb(mg),
                f"**{mg / mo:.2f}**",
                kb(md) if md is not None else "-",
                f"**{md / mo:.2f}**" if md is not None else "-",
                kb(po),
                kb(pg),
                kb(pd) if pd is not None else "-",
            ]
        )
    parts.append("Marginal bytes per step between sizes (Δ bytes / Δ steps), kB\n")
    parts.append(
        table(
            [
                "steps",
                "Chorus file",
                "LangGraph default file",
                "ratio",
                "LangGraph DeltaChannel file",
                "ratio",
                "Chorus stored",
                "LangGraph default stored",
                "LangGraph DeltaChannel stored",
            ],
            rows,
        )
    )

    rows = [
        [
            f"{n:,}",
            ours[n].get("state_steps", "?"),
            ours[n].get("steps_dropped", "?"),
            full[n].get("state_messages", "?"),
            delta[n].get("state_messages", "?") if n in delta else "-",
        ]
        for n in sizes
    ]
    parts.append(
        "What each side's state holds at the end (Chorus: steps in the agent's state, capped;"
        " LangGraph: messages in the graph's state, all of them)\n"
    )
    parts.append(
        table(
            [
                "steps",
                "Chorus state steps",
                "Chorus steps dropped from state (still in the log)",
                "LangGraph default messages",
                "LangGraph DeltaChannel messages",
            ],
            rows,
        )
    )

    rows = []
    for n in sizes:
        o = ours[n]
        req = o["by_type"].get("LlmRequested", [0, 0])[1]
        rows.append(
            [
                f"{n:,}",
                o["events"],
                kb(o["event_bytes"] / n),
                kb(req / n),
                kb(o["prompt_text_bytes"] / n),
                kb((o["event_bytes"] - req) / n),
                o["snapshots"],
                kb(o["snapshot_bytes"] / n),
            ]
        )
    parts.append("Chorus, what the bytes are (kB per step)\n")
    parts.append(
        table(
            [
                "steps",
                "events",
                "events kB/step",
                "of which LlmRequested",
                "prompt text it holds (inflated)",
                "all other events",
                "snapshots",
                "snapshots kB/step",
            ],
            rows,
        )
    )

    if delta:
        rows = []
        for n in sizes:
            d = delta.get(n)
            if d:
                rows.append(
                    [
                        f"{n:,}",
                        kb(d["file"] / n),
                        f"{d['file'] / ours[n]['file']:.2f}",
                        kb(d["checkpoint_bytes"] / n),
                        kb(d["write_bytes"] / n),
                    ]
                )
        parts.append(
            "LangGraph DeltaChannel (beta, not the default), what its bytes are, kB per step\n"
        )
        parts.append(
            table(
                [
                    "steps",
                    "file kB/step",
                    "ratio to Chorus",
                    "checkpoints kB/step",
                    "writes kB/step",
                ],
                rows,
            )
        )

    rows = [
        [
            f"{n:,}",
            f"{ours[n]['seconds']:.1f}",
            f"{full[n]['seconds']:.1f}",
            f"{delta[n]['seconds']:.1f}" if n in delta else "-",
            full[n]["checkpoints"],
            full[n]["writes"],
        ]
        for n in sizes
    ]
    parts.append("Context: wall time of each run (s) and LangGraph row counts\n")
    parts.append(
        table(
            [
                "steps",
                "Chorus s",
                "LangGraph s",
                "LangGraph delta s",
                "checkpoints",
                "writes",
            ],
            rows,
        )
    )
    return "\n".join(parts)


def machine(lg: dict[str, Any]) -> str:
    from importlib import metadata

    ours = ", ".join(
        f"{p} {metadata.version(p)}" for p in ("eventsourcing", "pydantic", "msgpack")
    )
    theirs = ", ".join(f"{p} {v}" for p, v in lg["versions"].items())
    return (
        f"nproc {os.cpu_count()}, {platform.machine()}, Python {platform.python_version()}, "
        f"SQLite {sqlite3.sqlite_version}, {ours}; {theirs}; load average {os.getloadavg()[0]:.1f}"
    )


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--sizes",
        default="10,100,1000",
        help="run lengths in steps (max 1000 on a shared machine)",
    )
    p.add_argument("--side", choices=["both", "chorus", "langgraph"], default="both")
    p.add_argument(
        "--json", help="write this side's results here (the langgraph half's output)"
    )
    args = p.parse_args(argv)
    sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})

    if args.side == "langgraph":
        langgraph_side(sizes, args.json or "/dev/stdout")
        return

    started = time.perf_counter()
    ours: dict[int, dict[str, Any]] = {}
    for n in sizes:
        with tempfile.TemporaryDirectory(prefix="chorus-bench-bytes-") as d:
            ours[n] = run_chorus(n, Path(d))
        print(f"  chorus {n} steps: {ours[n]['seconds']:.1f} s", flush=True)
    if args.side == "chorus":
        text = json.dumps(ours, indent=1)
        Path(args.json).write_text(text) if args.json else print(text)
        return

    python = ensure_langgraph_venv()
    with tempfile.TemporaryDirectory(prefix="chorus-bench-bytes-") as d:
        out = os.path.join(d, "langgraph.json")
        subprocess.run(
            [
                str(python),
                "-m",
                "tests.bench.bench_bytes",
                "--side",
                "langgraph",
                "--sizes",
                args.sizes,
                "--json",
                out,
            ],
            cwd=REPO,
            check=True,
        )
        lg = json.loads(Path(out).read_text())
    print()
    print(machine(lg), "\n")
    print(report(sizes, ours, lg))
    if args.json:
        Path(args.json).write_text(
            json.dumps({"chorus": ours, "langgraph": lg}, indent=1)
        )
    print(f"total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
