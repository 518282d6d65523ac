"""The agent on the local model, against a bare loop, on tests/bench/eval/agent_eventsourcing.json.

For each question, in the same run and against the same llama.cpp server:
- chorus: `Client().submit(q, root=<eventsourcing package>)` — Ray actors, events in SQLite,
  the gateway recording every call;
- bare:   the openai client calling the same server with the same two tools, the same
  prompt and parsing, in a plain Python loop: no actors, no events, no store.

A question counts as answered when every string in its `expect` list appears in the final
answer (case-insensitive). Reports answered/total, LLM calls and wall time per question;
the wall-time ratio chorus/bare is the runtime's overhead (LLM time dominates both).

    .venv/bin/python tests/bench/bench_agent.py [--questions N] [--max-iterations 10]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from actors.agent.policy import is_repeat, repeat_observation, unwrap_answer  # noqa: E402
from actors.agent.parsing import parse_step  # noqa: E402
from actors.agent.prompts import HistoryItem, StepProblem, build_messages, step_schema  # noqa: E402
from actors.tools.files import ReadFile, SearchFiles  # noqa: E402

EVAL = ROOT / "tests" / "bench" / "eval" / "agent_eventsourcing.json"
PARAMS = {"temperature": 0.0, "max_tokens": 512}


def corpus() -> Path:
    import eventsourcing

    return Path(eventsourcing.__file__).parent


def answered(answer: str, expect: list[str]) -> bool:
    return all(e.lower() in answer.lower() for e in expect)


def bare_loop(base_url: str, model: str, question: str, root: Path, max_iterations: int) -> tuple[str, int]:
    """ReAct with the openai client and the tools as plain objects. Returns (answer, calls)."""
    from openai import OpenAI

    client = OpenAI(base_url=base_url, api_key="not-needed", max_retries=0, timeout=600)
    tools = {"search_files": SearchFiles(root=str(root)), "read_file": ReadFile(root=str(root))}
    specs = [(n, t.signature(), t.description) for n, t in tools.items()]
    history: list[HistoryItem] = []
    rejected = 0
    for iteration in range(1, max_iterations + 1):
        last = iteration >= max_iterations or rejected >= 2
        messages = build_messages(question, specs, history, iteration, max_iterations, force_answer=last)
        schema = step_schema([] if last else list(tools))
        reply = client.chat.completions.create(
            model=model,
            messages=messages,
            response_format={"type": "json_object", "schema": schema},  # type: ignore[typeddict-item]
            **PARAMS,
        )
        content = reply.choices[0].message.content or ""
        try:
            parsed = json.loads(content)
        except json.JSONDecodeError:
            parsed = None
        step = parse_step(parsed if isinstance(parsed, dict) else None, content, list(tools))
        if isinstance(step, StepProblem):
            history.append(HistoryItem(observation=step.observation))
            rejected += 1
            continue
        if step.action == "answer":
            return str(step.args.get("answer", "")), iteration
        if is_repeat(history, step.action, step.args):
            obs = repeat_observation(history, step.action, step.args)
            history.append(HistoryItem(thought=step.thought, action=step.action, args=step.args, observation=obs))
            rejected += 1
            continue
        rejected = 0
        try:
            obs = tools[step.action].execute(**step.args)
        except Exception as e:  # noqa: BLE001 - an observation, as in the agent
            obs = f"Error: {e}"
        history.append(HistoryItem(thought=step.thought, action=step.action, args=step.args, observation=obs))
    return "", max_iterations


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--questions", type=int, default=0, help="only the first N questions")
    ap.add_argument("--max-iterations", type=int, default=10)
    ap.add_argument("--out", type=Path, help="also write the table (markdown) here")
    args = ap.parse_args()

    from actors import Client
    from actors.runtime.llm.local_server import LocalLlamaServer
    from actors.runtime.settings import Settings

    questions = json.loads(EVAL.read_text())["questions"]
    if args.questions:
        questions = questions[: args.questions]
    root = corpus()
    data = Path(tempfile.mkdtemp(prefix="chorus-bench-"))
    base = Settings.from_env()
    server = LocalLlamaServer(base)
    server.start()
    settings = base.model_copy(
        update={"data_dir": data, "store_url": f"sqlite:///{data / 'chorus.db'}",
                "llm_base_url": server.base_url, "llm_structured": "json_object"}
    )  # fmt: skip
    print(f"Chorus runs are recorded in {settings.store_url}", flush=True)
    rows = []
    with Client(settings=settings) as chorus:
        for i, q in enumerate(questions):
            # llama.cpp reuses the KV cache of a shared prompt prefix, which favours whichever
            # loop asks second: alternate the order.
            def bare() -> tuple[str, int, float]:
                t = time.perf_counter()
                answer, calls = bare_loop(server.base_url, settings.llm_model, q["q"], root, args.max_iterations)
                return answer, calls, time.perf_counter() - t

            def ours() -> tuple[object, float]:
                t = time.perf_counter()
                run = chorus.submit(q["q"], root=root, max_iterations=args.max_iterations)
                run.wait()
                return run, time.perf_counter() - t

            if i % 2 == 0:
                answer, bare_calls, bare_s = bare()
                run, chorus_s = ours()
            else:
                run, chorus_s = ours()
                answer, bare_calls, bare_s = bare()
            result = run.result
            events = chorus.events(run.run_id)
            chorus_calls = sum(1 for r in events if r.event.type_name == "LlmCompleted")
            chorus_answer = unwrap_answer(result.answer or "")
            rows.append(
                {
                    "q": q["q"],
                    "chorus_ok": answered(chorus_answer, q["expect"]),
                    "chorus_calls": chorus_calls,
                    "chorus_s": chorus_s,
                    "bare_ok": answered(answer, q["expect"]),
                    "bare_calls": bare_calls,
                    "bare_s": bare_s,
                    "chorus_answer": chorus_answer,
                    "bare_answer": answer,
                }
            )
            r = rows[-1]
            print(
                f"{q['q'][:60]:<60} chorus {'✓' if r['chorus_ok'] else '✗'} {chorus_calls:>2} calls "
                f"{chorus_s:6.1f}s | bare {'✓' if r['bare_ok'] else '✗'} {bare_calls:>2} calls {bare_s:6.1f}s",
                flush=True,
            )
    server.stop()

    lines = [
        f"Max iterations {args.max_iterations}; temperature 0; the order of the two loops alternates per question.",
        "",
        "| question | Chorus answered | LLM calls | wall s | bare answered | LLM calls | wall s |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['q']} | {'yes' if r['chorus_ok'] else 'no'} | {r['chorus_calls']} | {r['chorus_s']:.0f} "
            f"| {'yes' if r['bare_ok'] else 'no'} | {r['bare_calls']} | {r['bare_s']:.0f} |"
        )
    c_ok = sum(r["chorus_ok"] for r in rows)
    b_ok = sum(r["bare_ok"] for r in rows)
    c_s = sum(r["chorus_s"] for r in rows)
    b_s = sum(r["bare_s"] for r in rows)
    c_calls = sum(r["chorus_calls"] for r in rows)
    b_calls = sum(r["bare_calls"] for r in rows)
    per_call = [
        (r["chorus_s"] / r["chorus_calls"]) / (r["bare_s"] / r["bare_calls"])
        for r in rows
        if r["chorus_calls"] and r["bare_calls"]
    ]
    lines.append(
        f"| **total** | **{c_ok}/{len(rows)}** | {c_calls} | {c_s:.0f} | **{b_ok}/{len(rows)}** | {b_calls} | {b_s:.0f} |"
    )
    summary = (
        f"\nWall time per LLM call, Chorus / bare loop: median {statistics.median(per_call):.2f}x "
        f"(the runtime's overhead: actors, events, store; LLM time dominates both)."
        if per_call
        else ""
    )
    table = "\n".join(lines) + "\n" + summary + "\n\nAnswers:\n" + "\n".join(
        f"- {r['q']}\n  - Chorus: {r['chorus_answer'][:300]!r}\n  - bare: {r['bare_answer'][:300]!r}" for r in rows
    )
    print(table)
    if args.out:
        args.out.write_text(table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
