"""Agent functions and tools for the tests of the default budget, the waiting status, durable
timers and crash recovery (Ray workers import them by path: tests.support is on their
PYTHONPATH)."""

from __future__ import annotations

from pathlib import Path

from actors.sdk import agent, tool


@agent
def loops_forever(ctx, goal: str) -> str:
    while True:  # the bug the default budget stops
        ctx.llm("once more")


@agent
def makes_calls(ctx, goal: str) -> str:
    """`goal` LLM calls, then the last reply."""
    reply = ""
    for i in range(int(goal)):
        reply = ctx.llm(f"call {i}")
    return reply


@agent
def naps(ctx, goal: str) -> str:
    """One LLM call, a sleep of `goal` seconds, another LLM call."""
    before = ctx.llm("before the nap")
    ctx.sleep(float(goal))
    return f"{before} / {ctx.llm('after the nap')}"


@agent
def naps_only(ctx, goal: str) -> str:
    """A sleep of `goal` seconds and no model call (the woken run needs no scripted model)."""
    ctx.sleep(float(goal))
    return "rested"


@agent
def waits_with_timeout(ctx, goal: str) -> str:
    got = ctx.wait_for("go", timeout=float(goal))
    return "timed out" if got is None else f"got {got}"


@agent
def approval_then_done(ctx, goal: str) -> str:
    got = ctx.wait_for("approval")
    return f"approved: {got}"


@tool
def side_effect(step: int, log: str) -> str:
    """Append a line to a file: a side effect a repeated call would show."""
    with open(log, "a") as f:
        f.write(f"step {step}\n")
    return f"did {step}"


@agent
def tools_and_calls(ctx, goal: str) -> str:
    """Five rounds of a tool call with a side effect, then an LLM call (`goal`: the log file)."""
    answer = ""
    for i in range(5):
        ctx.tool(side_effect, step=i, log=goal)
        answer = ctx.llm(f"round {i}")
    return answer


def lines(path: str | Path) -> list[str]:
    p = Path(path)
    return p.read_text().splitlines() if p.exists() else []
