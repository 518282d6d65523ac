"""Finding JSON in a small model's reply: it wraps JSON in ``` fences, adds a sentence
around it, leaves trailing commas, writes Python literals, or is cut off by max_tokens.

`parse_json_object` is strict (the first object that is valid JSON: what the gateway records
as a completion's `parsed`); `json_objects` is lenient (every object it can recover, for the
agent's step parser). Pure.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

# -- the reply's object (the gateway's `parsed`) ---------------------------------------------

_STRICT_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\s*\n?(.*?)```", re.DOTALL)


def parse_json_object(text: str) -> dict[str, Any] | None:
    """The JSON object in a model's reply, or None. Never raises on garbage.

    Small models wrap JSON in ``` fences or add a sentence around it: take the fenced body if
    there is one, then the outermost {...}.
    """
    if not text:
        return None
    candidates = [m.group(1) for m in _STRICT_FENCE.finditer(text)] + [text]
    for body in candidates:
        start, end = body.find("{"), body.rfind("}")
        if start == -1 or end <= start:
            continue
        try:
            value = json.loads(body[start : end + 1])
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            return value
    return None


# -- every object, leniently (the agent's step parser) -----------------------------------------------------------------------------

_FENCE = re.compile(r"```(?:json|JSON|python)?\s*(.*?)```", re.DOTALL)


def load_object(text: str) -> Any:
    for attempt in (text, re.sub(r",\s*([}\]])", r"\1", text)):
        try:
            return json.loads(attempt)
        except ValueError:
            pass
        try:
            value = ast.literal_eval(attempt)
            if isinstance(value, (dict, list)):
                return value
        except Exception:  # literal_eval raises many kinds on odd input (e.g. a set of dicts)
            pass
    return None


def json_objects(text: str) -> list[dict[str, Any]]:
    """JSON objects in a reply, in order: fenced blocks first, then any balanced {...}."""
    sources = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    found: list[dict[str, Any]] = []
    for source in sources:
        for chunk in balanced(source):
            value = load_object(chunk)
            if isinstance(value, dict) and value not in found:
                found.append(value)
        if found:
            break
    return found


def balanced(text: str) -> list[str]:
    """Top-level {...} spans, respecting strings."""
    spans, depth, start, quote, escape = [], 0, -1, "", False
    for i, ch in enumerate(text):
        if quote:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == quote:
                quote = ""
            continue
        if ch in "\"'" and depth > 0:
            quote = ch
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                spans.append(text[start : i + 1])
    if depth > 0 and start >= 0:  # cut off (max tokens): try closing it
        spans.append(text[start:] + quote + "}" * depth)
    return spans
