"""Reading a small model's reply as a step: JSON in any of the shapes small models produce
(fenced, wrapped in prose, args at the top level, a tool named by a synonym, `Action:` lines),
or a `StepProblem` whose observation says exactly what to fix."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from actors.agent.policy import ARG_ALIASES, unwrap_answer
from actors.agent.prompts import ANSWER, PRIMARY_ARGS, AgentStep, StepProblem, step_json
from actors.runtime.llm.json_text import balanced, json_objects, load_object

# -- parsing a reply ------------------------------------------------------------------------------

_THOUGHT_KEYS = ("thought", "thoughts", "reasoning", "reason", "think", "thinking", "plan")
_ACTION_KEYS = ("action", "tool", "tool_name", "name", "function", "act", "command")
_ARGS_KEYS = (
    "args", "arguments", "action_input", "parameters", "params", "input", "tool_input",
    "inputs", "kwargs", "action_args",
)  # fmt: skip
_ANSWER_KEYS = ("answer", "final_answer", "finalanswer", "final")
# Keys a model adds that are never arguments (a hallucinated observation, bookkeeping).
_IGNORED_KEYS = frozenset({"observation", "observations", "result", "output", "status", "type", "id", "step"})
_KNOWN_ARGS = frozenset({"query", "path", "start_line", "end_line"})
_BUILTIN_TOOLS = frozenset({"search_files", "read_file"})
_ANSWER_ARG_KEYS = ("answer", "final_answer", "text", "content", "response", "result", "message", "output")
_ANSWER_WORDS = frozenset(
    {"answer", "finalanswer", "final", "finish", "finished", "done", "respond", "response", "reply", "submit", "stop"}
)
# Verbs small models use for the built-in tools, by the word of the tool's name they mean.
_SYNONYMS = {
    "grep": "search", "find": "search", "lookup": "search", "locate": "search", "query": "search",
    "searching": "search", "keyword": "search",
    "open": "read", "cat": "read", "view": "read", "show": "read", "get": "read", "load": "read",
    "reading": "read", "display": "read", "list": "read", "ls": "read", "dir": "read",
    "code": "file", "files": "file", "content": "file", "contents": "file", "lines": "file",
}  # fmt: skip
_GENERIC_WORDS = frozenset({"file", "tool", "the", "a", "in", "for", "to"})
_CALL = re.compile(r"^\s*([A-Za-z_][\w\- ]*?)\s*\((.*)\)\s*$", re.DOTALL)


_NO_PARAMETERS = re.compile(r"[\w.]+\(\s*\)")


def argless_tools(tools: Iterable[Any]) -> frozenset[str]:
    """The names of the tools that take no arguments (their signature is `name()`): a step
    calling one with empty args is a call, not a step missing its arguments."""
    return frozenset(t.name for t in tools if _NO_PARAMETERS.fullmatch(t.signature.strip()))


def parse_step(
    parsed: Mapping[str, Any] | None,
    content: str,
    tool_names: Sequence[str],
    *,
    primary_args: Mapping[str, str] | None = None,
    argless: Collection[str] = (),
) -> AgentStep | StepProblem:
    """The step in a model reply, from the server's parsed JSON or else the raw content.

    Tolerated: JSON in code fences or among prose; single quotes; the args at top level or
    under another name (arguments, action_input, ...) or as a JSON string or a bare value;
    the action nested ({"name", "arguments"}), written as a call (search_files(query='x')),
    named loosely ("search", "read", "final_answer") or used as a key ({"read_file": {...}});
    an "answer" key instead of an action; the classic "Action: / Action Input:" text; and
    `<answer>` tags. Tools named in `argless` take no arguments, so empty args are fine.
    """
    primaries = {**PRIMARY_ARGS, **(primary_args or {})}
    names = [n for n in tool_names if n != ANSWER]
    raw = content or ""
    candidates: list[Any] = []
    if isinstance(parsed, Mapping):
        candidates.append(dict(parsed))
    elif isinstance(parsed, list):
        candidates += [p for p in parsed if isinstance(p, Mapping)]
    elif _ACTION_LINE.search(raw):  # "Thought: … Action: … Action Input: {…}" (keeps the thought)
        text_step = _from_text(raw, names, primaries, argless)
        if text_step is not None:
            return text_step
    candidates += json_objects(raw)

    first_problem: StepProblem | None = None
    for obj in candidates:
        result = _from_object(obj, names, primaries, raw, argless)
        if isinstance(result, AgentStep):
            return result
        first_problem = first_problem or result
    if first_problem is not None:
        return first_problem
    text_step = _from_text(raw, names, primaries, argless)
    if text_step is not None:
        return text_step
    return _problem("no_json", "Your reply was not a JSON object.", names, primaries, raw)


def _problem(reason: str, what: str, names: Sequence[str], primaries: Mapping[str, str], raw: str) -> StepProblem:
    first = names[0] if names else ANSWER
    example = step_json("...", first, {primaries.get(first, "..."): "..."})
    choices = ", ".join([*names, ANSWER])
    observation = (
        f"{what} Reply with ONE JSON object only, like {example} "
        f'or {step_json("...", ANSWER, {"answer": "..."})}. action must be one of: {choices}.'
    )
    return StepProblem(reason=reason, observation=observation, raw=raw[:500])


def _lower_keys(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {str(k).strip().lower().replace(" ", "_").replace("-", "_"): v for k, v in obj.items()}


def _first(obj: Mapping[str, Any], keys: Sequence[str]) -> tuple[str | None, Any]:
    for key in keys:
        if key in obj and obj[key] not in (None, ""):
            return key, obj[key]
    return None, None


def _from_object(
    obj: Mapping[str, Any], names: Sequence[str], primaries: Mapping[str, str], raw: str, argless: Collection[str] = ()
) -> AgentStep | StepProblem:
    data = _lower_keys(obj)
    _, thought = _first(data, _THOUGHT_KEYS)
    thought = _text(thought)
    action_key, action = _first(data, _ACTION_KEYS)
    args_key, args = _first(data, _ARGS_KEYS)

    if isinstance(action, Mapping):  # {"action": {"name": ..., "args": ...}}
        inner = _lower_keys(action)
        _, action = _first(inner, ("name", "tool", "action", "function"))
        _, inner_args = _first(inner, _ARGS_KEYS)
        args = inner_args if inner_args is not None else args
        if action is None:
            return _problem("no_action", "Your JSON had no action name.", names, primaries, raw)

    if action is None:
        exact = {_norm(n): n for n in names}
        tool_key = next((k for k in data if _norm(k) in exact), None)
        answer_key, answer = _first(data, _ANSWER_KEYS)
        if tool_key is not None:  # {"read_file": {"path": ...}}
            action_key, action, args_key, args = tool_key, exact[_norm(tool_key)], tool_key, data[tool_key]
        elif answer_key is not None:  # {"thought": ..., "answer": ...}
            evidence = {k: data[k] for k in EVIDENCE_KEYS if k in data}
            return _answer_step(thought, {"answer": answer, **evidence}, names, primaries, raw)
        else:  # {"query": "x"} or {"args": {"path": ...}}: the arguments say which tool
            keys = set(_lower_keys(args)) if isinstance(args, Mapping) else set(data)
            keys = {ARG_ALIASES.get(k, k) for k in keys}
            owners = [n for n in names if primaries.get(n) in keys]
            if len(owners) != 1:
                return _problem("no_action", 'Your JSON had no "action".', names, primaries, raw)
            action = owners[0]
            if args is None:
                args = {k: v for k, v in data.items() if k not in _THOUGHT_KEYS}

    action_text = _text(action).strip()
    call = _CALL.match(action_text)
    if call:  # "search_files(query='x')"
        action_text = call.group(1).strip()
        call_args = _call_args(call.group(2), action_text, names, primaries)
        if call_args and not args:
            args = call_args

    tool = _match_action(action_text, names)
    if tool is None:
        return _problem("unknown_action", f"'{_short(action_text)}' is not an action.", names, primaries, raw)

    used = {k for k in (action_key, args_key) if k} | set(_THOUGHT_KEYS) | _IGNORED_KEYS
    extra = {k: v for k, v in data.items() if k not in used}
    args = _as_args(args, tool, primaries)
    if tool == ANSWER:
        if not _answer_text(args):
            _, top = _first(extra, _ANSWER_KEYS)
            if top is not None:
                args = {"answer": top}
        args = {**{k: extra[k] for k in EVIDENCE_KEYS if k in extra}, **args}
        return _answer_step(thought, args, names, primaries, raw)
    extra = {k: v for k, v in extra.items() if k not in _ANSWER_KEYS}
    if not args:  # {"action": "search_files", "query": "x"}
        args = extra
    else:  # {"action": "read_file", "args": {"path": "a.py"}, "start_line": 40}
        args.update({k: v for k, v in extra.items() if ARG_ALIASES.get(k, k) in _KNOWN_ARGS and k not in args})
    if not args and tool in argless:
        return AgentStep(thought=thought, action=tool, args={})
    if not args:
        primary = primaries.get(tool)
        what = f"{tool} needs its arguments in args" + (f', e.g. {{"{primary}": "..."}}.' if primary else ".")
        return _problem("missing_args", what, names, primaries, raw)
    if tool in _BUILTIN_TOOLS:  # {"file": "a.py"} -> {"path": "a.py"}, so history reads plainly
        args = _canonical_names(args)
    return AgentStep(thought=thought, action=tool, args=args)


def _canonical_names(args: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in args.items():
        low = str(key).lower()
        name = ARG_ALIASES.get(low, low if low in _KNOWN_ARGS else key)
        if name in args and name != key:
            name = key  # both spellings given: keep each as it was
        out.setdefault(name, value)
    return out


def _answer_step(
    thought: str, args: Mapping[str, Any], names: Sequence[str], primaries: Mapping[str, str], raw: str
) -> AgentStep | StepProblem:
    text = _answer_text(args)
    if not text:
        return _problem(
            "empty_answer",
            'Your answer was empty: put it in args, as {"answer": "..."}.',
            names,
            primaries,
            raw,
        )
    data = _lower_keys(args)
    kept = {k: data[k] for k in EVIDENCE_KEYS if data.get(k) not in (None, "", [], {})}
    return AgentStep(thought=thought, action=ANSWER, args={"answer": text, **kept})


# What a grounded answer carries besides its text (actors/agent/evidence.py reads them).
EVIDENCE_KEYS = ("source", "quote")


def _answer_text(args: Mapping[str, Any]) -> str:
    """The answer in args: a known key, else the one string, else every field spelled out."""
    data = _lower_keys(args)
    _, value = _first(data, _ANSWER_ARG_KEYS)
    if value is None:
        filled = {k: v for k, v in data.items() if v not in (None, "", [], {})}
        strings = [v for v in filled.values() if isinstance(v, str)]
        if len(filled) == 1 and strings:
            value = strings[0]
        elif filled:
            value = "; ".join(f"{k}: {v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}" for k, v in filled.items())
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return unwrap_answer(text).strip()


def _as_args(args: Any, tool: str, primaries: Mapping[str, str]) -> dict[str, Any]:
    if args is None or args == "":
        return {}
    if isinstance(args, str):
        text = args.strip()
        loaded = load_object(text) if text.startswith("{") else None
        if isinstance(loaded, Mapping):
            return dict(loaded)
        return {primaries.get(tool, "input"): text}
    if isinstance(args, Mapping):
        return dict(args)
    if isinstance(args, (list, tuple)):
        if tool == "read_file" and args and all(isinstance(a, (int, str)) for a in args):
            keys = ("path", "start_line", "end_line")
            return dict(zip(keys, args))
        if args and all(isinstance(a, str) for a in args):
            return {primaries.get(tool, "input"): " ".join(args)}
        if args and isinstance(args[0], Mapping):
            return dict(args[0])
        return {}
    return {primaries.get(tool, "input"): args}


def _call_args(inner: str, tool_text: str, names: Sequence[str], primaries: Mapping[str, str]) -> dict[str, Any]:
    """Arguments of `name(a, k=v)` written as Python (or JSON) call syntax."""
    try:
        call = ast.parse(f"f({inner})", mode="eval").body
    except SyntaxError:
        text = inner.strip().strip("'\"")
        tool = _match_action(tool_text, names)
        return {primaries.get(tool or "", "input"): text} if text else {}
    assert isinstance(call, ast.Call)
    out: dict[str, Any] = {}
    tool = _match_action(tool_text, names) or ""
    positional = ("path", "start_line", "end_line") if tool == "read_file" else (primaries.get(tool, "input"),)
    for i, arg in enumerate(call.args):
        if i < len(positional):
            out[positional[i]] = _literal(arg)
    for kw in call.keywords:
        if kw.arg:
            out[kw.arg] = _literal(kw.value)
    return out


def _literal(node: ast.AST) -> Any:
    try:
        return ast.literal_eval(node)
    except ValueError:
        return ast.unparse(node)


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _words(name: str) -> list[str]:
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", name)
    words = [w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w]
    return [_SYNONYMS.get(w, w) for w in words]


def _match_action(action: str, names: Sequence[str]) -> str | None:
    """The tool (or "answer") a loosely written action means, or None."""
    n = _norm(action)
    if not n:
        return None
    for name in names:
        if _norm(name) == n:
            return name
    if n in _ANSWER_WORDS or n.startswith("finalanswer"):
        return ANSWER
    said = set(_words(action))
    # the verb of a tool's name decides (search vs read); shared nouns (file) only break ties
    by_verb = [name for name in names if _words(name) and _words(name)[0] in said]
    if len(by_verb) == 1:
        return by_verb[0]
    said -= _GENERIC_WORDS  # "file" alone must not turn search_files into read_file
    scores = {name: len(said & set(_words(name))) for name in names}
    best = max(scores.values(), default=0)
    top = [name for name, score in scores.items() if score == best]
    if best > 0 and len(top) == 1:
        return top[0]
    if said & _ANSWER_WORDS:
        return ANSWER
    return None


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


_ACTION_LINE = re.compile(r"^\s*Action\s*:\s*(?P<action>.+?)\s*$", re.MULTILINE | re.IGNORECASE)
_INPUT = re.compile(r"^\s*Action[ _]Input\s*:\s*", re.MULTILINE | re.IGNORECASE)
_THOUGHT_LINE = re.compile(r"^\s*Thought\s*:\s*(?P<thought>.+?)\s*$", re.MULTILINE | re.IGNORECASE)
_FINAL = re.compile(r"Final\s+Answer\s*:\s*(?P<answer>.+)", re.IGNORECASE | re.DOTALL)


def _from_text(raw: str, names: Sequence[str], primaries: Mapping[str, str], argless: Collection[str] = ()) -> AgentStep | None:
    """A step written as text: `<answer>`, `Final Answer:`, or `Action:` / `Action Input:`."""
    thought_m = _THOUGHT_LINE.search(raw)
    thought = thought_m["thought"] if thought_m else ""
    if re.search(r"<answer>", raw, re.IGNORECASE):
        text = unwrap_answer(raw)
        if text:
            return AgentStep(thought=thought, action=ANSWER, args={"answer": text})
    final = _FINAL.search(raw)
    if final and final["answer"].strip():
        return AgentStep(thought=thought, action=ANSWER, args={"answer": final["answer"].strip()})
    action_m = _ACTION_LINE.search(raw)
    if not action_m:
        return None
    action_text = action_m["action"]
    args: Any = None
    bracket = re.match(r"^(?P<name>[\w\- ]+?)\s*\[(?P<arg>.*)\]$", action_text)
    call = _CALL.match(action_text)
    if bracket:
        action_text, args = bracket["name"], bracket["arg"].strip().strip("'\"")
    elif call:
        action_text = call.group(1)
        args = _call_args(call.group(2), action_text, names, primaries)
    tool = _match_action(action_text, names)
    if tool is None:
        return None
    input_m = _INPUT.search(raw)
    if args in (None, "", {}) and input_m:
        rest = raw[input_m.end() :].strip()
        objects = balanced(rest) if rest.startswith("{") else []
        args = load_object(objects[0]) if objects else None
        if not isinstance(args, Mapping):
            args = rest.splitlines()[0].strip().strip("'\"`") if rest else None
    args = _as_args(args, tool, primaries)
    if tool == ANSWER:
        text = _answer_text(args)
        return AgentStep(thought=thought, action=ANSWER, args={"answer": text}) if text else None
    return AgentStep(thought=thought, action=tool, args=args) if args or tool in argless else None
