"""Scripted synth minds for tests and benchmarks of the simulation, kept in the package so
Ray workers can unpickle them (formerly `actors.simulation.testing`). `scripted_mind` answers a synth's cognitive request from its own menu (it
reads the action ids the user message lists), like a model that always replies with
valid JSON: deterministic, instant, and blind to anything the menu does not say.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from actors.runtime.llm.types import LlmRequest
from actors.testing.model import ScriptedProvider

_ID = r"(?:move_to|inspect|repair|switch|take|open|consume)_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|wait|communicate"
ACTION = re.compile(rf"(?m)^({_ID}):")  # a menu line: `id: label`
BLOCKED = re.compile(rf"(?m)^- ({_ID}): blocked")  # a previous outcome that was refused
PREFERENCE = ("repair_", "open_", "take_", "move_to_", "switch_", "inspect_", "consume_", "wait")


def _user(request: LlmRequest) -> str:
    return str(next((m["content"] for m in reversed(request.messages) if m.get("role") == "user"), ""))


def menu(request: LlmRequest) -> list[str]:
    """The action ids the request's last user message offers, in order, once each, less
    any that was just refused."""
    text = _user(request)
    refused = set(BLOCKED.findall(text))
    seen: list[str] = []
    for found in ACTION.findall(text):
        if found not in seen and found not in refused:
            seen.append(found)
    return seen


def reply(action_id: str, say: str = "", mood: str = "determined", memories: list[str] | None = None) -> str:
    intents: list[dict[str, Any]] = [{"action_id": action_id, "say": ""}]
    if say:
        intents.append({"action_id": "communicate", "say": say})
    return json.dumps(
        {
            "inner_monologue": {"react": "I look around.", "interpret": "Things need doing.",
                                "deliberate": f"{action_id} seems best.", "resolve": f"I will {action_id.split('_')[0]}."},
            "belief_updates": [],
            "mood": mood,
            "memories": memories or [],
            "intents": intents,
            "theory_of_mind": [],
        }  # fmt: skip
    )


def scripted_mind(request: LlmRequest) -> str:
    """Prefer fixing things: repair, open, take, then move on. A move never goes straight
    back where the synth came from (it remembers "left PLACE"), and among the rest is
    chosen by a hash of the request, so synths explore and a replay moves the same way."""
    options = menu(request)
    text = _user(request)
    here = re.search(r"You are at: (.+?)\.?$", text, re.MULTILINE)
    system = str(request.messages[0].get("content", ""))
    came_from = re.findall(r"left (.+?)(?:\s*$|\s*\()", system, re.MULTILINE)
    labels = dict(re.findall(rf"(?m)^({_ID}): (.*)$", text))
    digest = int(hashlib.sha256(request.hash().encode()).hexdigest()[:8], 16)
    for prefix in PREFERENCE:
        matching = [o for o in options if o.startswith(prefix)]
        if prefix == "move_to_" and came_from and len(matching) > 1:
            onward = [o for o in matching if labels.get(o, "") != f"Move to {came_from[-1]}"]
            matching = onward or matching
        if matching:
            if prefix == "move_to_":
                memory = [f"left {here.group(1)}"] if here else []
                return reply(matching[digest % len(matching)], memories=memory)
            return reply(matching[0])
    return reply("wait")


def marco_polo(request: LlmRequest) -> str:
    """Thomas calls "MARCO" when he has heard nothing; whoever hears "MARCO" answers
    "POLO"; everyone else waits: speech that must cross microcycles within one cycle."""
    system = str(request.messages[0].get("content", ""))
    text = str(request.messages[-1].get("content", ""))
    if "POLO" in text:
        return reply("wait")
    if "MARCO" in text:
        return reply("wait", say="POLO")
    if "Thomas" in system.split("\n", 3)[0] or system.startswith("You are Thomas"):
        return reply("wait", say="MARCO")
    return reply("wait")


def scripted_synths(fn: Any = scripted_mind) -> ScriptedProvider:
    return ScriptedProvider(fn, model="scripted-synth")


def slow_mind(request: LlmRequest) -> str:
    """`scripted_mind`, after a pause: long enough to kill a director mid-cycle."""
    import time

    time.sleep(1.5)
    return scripted_mind(request)


def straggler_mind(request: LlmRequest) -> str:
    """`scripted_mind`, with James thinking for 15 s and the others for 0.5 s: a window in
    which a cycle has recorded calls and is surely not committed (to kill its director)."""
    import time

    system = str(request.messages[0].get("content", ""))
    time.sleep(15.0 if system.startswith("You are James") else 0.5)
    return scripted_mind(request)
