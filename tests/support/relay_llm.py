"""A scripted model for relays served on Ray: module-level, so Ray workers unpickle it by
name. It plays the Builder (by the roadmap item on the prompt's first line) and the
Verifier's coherence check, and writes the pid of the process that called it into each
reply, so a test reads from the log which actor made which call. `slow_model` takes a while
over a chosen item's build: a turn in progress to kill the scheduler in."""

from __future__ import annotations

import json
import os
import time

from actors.relay import prompts
from actors.runtime.llm.types import LlmRequest

SLOW_S = 6.0
SLOW_ITEM = "mul(a, b)"

_TEST = "from calc_{fn} import {fn}\n\n\ndef test_{fn}():\n    assert {fn}(2, 3) == {want}\n"

ROADMAP = (
    "items:\n"
    "  - title: Write add(a, b) in calc_add.py\n"
    "    acceptance: [add(2, 3) == 5, with a test]\n"
    "  - title: Write mul(a, b) in calc_mul.py\n"
    "    acceptance: [mul(2, 3) == 6, with a test]\n"
)
ONE_ITEM = "items:\n  - title: Write add(a, b) in calc_add.py\n    acceptance: [add(2, 3) == 5, with a test]\n"


def reply(fn: str, body: str, want: int) -> str:
    return (
        f"I wrote {fn} and its test (builder pid {os.getpid()}).\n\n"
        f"File: calc_{fn}.py\n```python\ndef {fn}(a, b):\n    return {body}\n```\n\n"
        f"File: test_{fn}.py\n```python\n{_TEST.format(fn=fn, want=want)}```\n\n"
        "Verification hints:\n- run pytest\n"
    )


def model(request: LlmRequest) -> str:
    system = request.messages[0]["content"]
    if system == prompts.VERIFIER_SYSTEM:
        return json.dumps({"meets_criteria": True, "reason": f"verifier pid {os.getpid()}", "unmet": []})
    first = request.messages[-1]["content"].split("\n")[0]
    return reply("mul", "a * b", 6) if SLOW_ITEM in first else reply("add", "a + b", 5)


def slow_model(request: LlmRequest) -> str:
    first = request.messages[-1]["content"].split("\n")[0]
    if request.messages[0]["content"] == prompts.BUILDER_SYSTEM and SLOW_ITEM in first:
        time.sleep(SLOW_S)
    return model(request)


def pid_of(reply_text: str) -> int:
    """The pid a reply names."""
    return int(reply_text.split(" pid ")[1].split(")")[0].split('"')[0])
