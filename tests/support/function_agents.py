"""Agent functions and scripted replies the Ray tests of agent functions use (Ray workers
import them by path: tests.support is on their PYTHONPATH)."""

from __future__ import annotations

import time

from actors.sdk import agent


def slow_reply(log: str, request) -> str:
    prompt = request.messages[-1]["content"]
    with open(log, "a") as f:
        f.write(prompt + "\n")
    time.sleep(0.4)
    return f"reply to {prompt}"


@agent
def six_steps(ctx, goal: str) -> str:
    answer = goal
    for i in range(6):
        answer = ctx.llm(f"step {i}")
    return answer


def notes_reply(request) -> str:
    """By the prompt, not by call count: a list restarts in each actor that serves the run."""
    return "Revised notes." if "Revise" in request.messages[-1]["content"] else "Draft notes."
