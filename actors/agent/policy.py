"""The ReAct agent's context policy: repeats, answers, observation size, condensed steps.

A small model loops: it repeats a search that found nothing, re-reads lines it has already
seen, and slows down as its context grows. These pure functions let the agent notice a
repeat and say what to do instead, cap what one observation may add to the context, and
condense an old step to one line that still says what it found (seed 004's baton:
condensed but complete).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from actors.tools.files import PATH_LINE, READ_WINDOW

REPEAT_MARK = "You already did this"
# Tools that read a file by line range and print `path, lines A-B of N:` then numbered lines
# (seed 003's read_code prints what read_file prints): repeats and condensing treat them alike.
READ_TOOLS = frozenset({"read_file", "read_code"})


class Step(Protocol):
    """What policy needs of a past step (prompt.HistoryItem has it)."""

    thought: str
    action: str
    args: dict[str, Any]
    observation: str


# -- argument equivalence --------------------------------------------------------------------

# Argument names small models use for the built-in tools' arguments.
ARG_ALIASES: dict[str, str] = {
    **dict.fromkeys(("q", "keyword", "keywords", "pattern", "text", "term", "terms", "search", "words"), "query"),
    **dict.fromkeys(("file", "file_path", "filepath", "filename", "file_name"), "path"),
    **dict.fromkeys(("start", "line", "line_start", "from_line", "begin", "offset"), "start_line"),
    **dict.fromkeys(("end", "line_end", "to_line", "stop", "until"), "end_line"),
}


def canonical_args(action: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """Arguments reduced to what decides a tool's result, so equivalent calls compare equal.

    Alias names map to canonical ones, strings are compared case- and space-insensitively,
    a query is its set of words, numbers given as text are numbers, and read_file's
    defaults (start_line 1, end_line 0) are filled in.
    """
    out: dict[str, Any] = {}
    for key, value in args.items():
        name = ARG_ALIASES.get(str(key).lower(), str(key).lower())
        if name in out and out[name] not in (None, ""):
            continue
        out[name] = _canonical_value(name, value)
    if action == "read_file" or "path" in out:
        m = PATH_LINE.match(str(out.get("path", "")))
        if m:  # read_file reads around the line, when no range is given
            out["path"] = m["path"]
            if _int(out.get("start_line"), 1) <= 1 and _int(out.get("end_line"), 0) <= 0:
                out["start_line"] = max(1, int(m["line"]) - 5)
        path = str(out.get("path", ""))
        while path.startswith("./"):
            path = path[2:]
        out["path"] = path
        out["start_line"] = max(1, _int(out.get("start_line"), 1))
        out["end_line"] = _int(out.get("end_line"), 0)
    return out


def _canonical_value(name: str, value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        value = " ".join(str(v) for v in value)
    if name == "query":
        return tuple(sorted(set(re.findall(r"\w+", str(value).lower()))))
    if isinstance(value, str):
        text = " ".join(value.strip().strip("'\"`").split())
        if re.fullmatch(r"-?\d+", text):
            return int(text)
        return text.lower()
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _int(value: Any, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


# -- repeats -----------------------------------------------------------------------------------

_READ_HEADER = re.compile(r"^(?P<path>.+?), lines (?P<a>\d+)-(?P<b>\d+) of (?P<n>\d+):", re.MULTILINE)
_READ_END = re.compile(r"^\(end of file: (?P<n>\d+) lines\)$", re.MULTILINE)


def _read_span(step: Step) -> tuple[str, int, int, int] | None:
    """(path, first, last, total) of the lines a read_file observation showed."""
    m = _READ_HEADER.search(step.observation or "")
    if not m:
        return None
    last = int(m["b"])
    if "[output cut here" in step.observation:  # format_observation dropped the tail
        shown = _NUMBERED.findall(step.observation)
        last = min(last, int(shown[-1])) if shown else int(m["a"]) - 1
    return m["path"].lower(), int(m["a"]), last, int(m["n"])


def _earlier_match(history: Sequence[Step], action: str, args: Mapping[str, Any]) -> int | None:
    """Index of the earliest past step this call repeats, or None."""
    if not action or action == "answer":
        return None
    wanted = canonical_args(action, args)
    for i, step in enumerate(history):
        if step.action == action and canonical_args(step.action, step.args) == wanted:
            return i
    if action in READ_TOOLS:
        return _covered_read(history, wanted)
    return None


def _covered_read(history: Sequence[Step], wanted: Mapping[str, Any]) -> int | None:
    """A read whose lines were all shown by earlier reads of the same file."""
    path = str(wanted.get("path", "")).lower()
    spans = [(i, s) for i, step in enumerate(history) if step.action in READ_TOOLS and (s := _read_span(step))]
    spans = [(i, s) for i, s in spans if s[0] == path or s[0].endswith("/" + path) or path.endswith("/" + s[0])]
    if not spans:
        return None
    total = spans[0][1][3]
    start = int(wanted.get("start_line", 1))
    end = int(wanted.get("end_line", 0))
    if end <= 0 or end < start:
        end = start + READ_WINDOW - 1
    end = min(end, total)
    if start > end:
        return None
    seen: set[int] = set()
    for _, (_, a, b, _) in spans:
        seen.update(range(a, b + 1))
    if all(n in seen for n in range(start, end + 1)):
        return spans[0][0]
    return None


def is_repeat(history: Sequence[Step], action: str, args: Mapping[str, Any]) -> bool:
    """Whether this tool call would only redo an earlier step.

    Equivalent arguments count as the same call (see `canonical_args`); a read_file of lines
    that earlier reads of the file already showed counts too. Answers never repeat.
    """
    return _earlier_match(history, action, args) is not None


def repeat_observation(history: Sequence[Step], action: str, args: Mapping[str, Any]) -> str:
    """The observation that replaces a repeated call: what it gave before, what to do now."""
    index = _earlier_match(history, action, args)
    call = render_call(action, args)
    if index is None:
        return f"{call} is not a repeat."
    earlier = history[index]
    repeats = sum(1 for s in history if (s.observation or "").startswith(REPEAT_MARK))
    result = step_result(earlier)
    if repeats >= 1:
        return (
            f"{REPEAT_MARK} again: {call} was step {index + 1} and its result was: {result}. "
            "Stop repeating. Answer NOW with action \"answer\", using what you have found "
            "(name the file and the class, function or variable)."
        )
    if action in READ_TOOLS:
        span = _read_span(earlier)
        more = f"read further on (start_line={span[2] + 1}), " if span and span[2] < span[3] else ""
        advice = f"{more}read another file, or answer now if those lines showed the answer"
    elif action == "search_files":
        advice = (
            "read_file one of those files near a listed line, search other words "
            "(a likely class or function name), or answer now if a listed line shows the answer"
        )
    else:
        advice = "do something different, or answer now if you know the answer"
    return f"{REPEAT_MARK}: {call} was step {index + 1} and its result was: {result}. Do not repeat it; instead {advice}."


# -- answers -----------------------------------------------------------------------------------

_ANSWER = re.compile(r"<answer>(.*?)(?:</answer>|$)", re.DOTALL | re.IGNORECASE)


def unwrap_answer(text: str) -> str:
    """The text inside the first <answer> tag (a missing closing tag is tolerated)."""
    m = _ANSWER.search(text or "")
    return (m.group(1) if m else text or "").strip()


def wrap_answer(text: str) -> str:
    """`<answer>…</answer>` around the answer; wrapping an already wrapped answer is a no-op."""
    return f"<answer>{unwrap_answer(text)}</answer>"


# -- observation size --------------------------------------------------------------------------

_NUMBERED = re.compile(r"^\s*(\d+): ", re.MULTILINE)


def format_observation(tool: str, output: Any, limit_chars: int = 4000) -> str:
    """A tool's output as an observation, cut at a line boundary to `limit_chars`.

    The note on a cut says how much was dropped and how to get the rest (for read_file,
    the start_line to continue from).
    """
    text = str(output if output is not None else "").rstrip()
    if not text:
        return f"({tool} returned nothing)"
    if len(text) <= limit_chars:
        return text
    room = max(limit_chars - 160, limit_chars // 2)
    cut = text.rfind("\n", 0, room)
    kept = text[: cut if cut > 0 else room]
    dropped = len(text) - len(kept)
    numbers = _NUMBERED.findall(kept)
    if tool in READ_TOOLS and numbers:
        last = int(numbers[-1])
        note = (
            f"[output cut here: {dropped} more characters. To see more read start_line={last + 1}, "
            "or give end_line to read fewer lines]"
        )
    elif tool == "search_files":
        note = f"[output cut here: {dropped} more characters. Search more specific words to see fewer files]"
    else:
        note = f"[output cut here: {dropped} of {len(text)} characters not shown]"
    return f"{kept}\n{note}"


# -- condensed steps (the baton) ---------------------------------------------------------------

_HIT = re.compile(r"^\s*(?P<path>[^\s:][^:]*):(?P<line>\d+): (?P<text>.*)$", re.MULTILINE)
_COUNT = re.compile(r"^(\d+) files? match", re.MULTILINE)
_DEFINES = re.compile(r"^\s*(\d+): \s*(?:async\s+def|def|class)\s+(\w+)|^\s*(\d+): ([A-Z][A-Z0-9_]{2,})\s*[:=]", re.MULTILINE)


def render_call(action: str, args: Mapping[str, Any]) -> str:
    inner = ", ".join(f"{k}={v!r}" for k, v in args.items())
    return f"{action or '(no action)'}({inner})"


def _short(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def step_result(step: Step, limit: int = 240) -> str:
    """What a step's observation said, in one line."""
    obs = (step.observation or "").strip()
    if not obs:
        return "nothing"
    first = obs.splitlines()[0]
    if obs.startswith(REPEAT_MARK):
        return "refused as a repeat"
    if first.lower().startswith("error") or "ToolInputError" in first:
        message = first.split("ToolInputError:", 1)[-1].removeprefix("Error:").strip()
        return "error: " + _short(message, min(limit, 150) - 7)
    if step.action == "search_files":
        if obs.startswith("No file under the root"):
            return "no file matched"
        count = _COUNT.search(obs)
        hits = _HIT.findall(obs)
        if count and hits:
            files = list(dict.fromkeys(p for p, _, _ in hits))
            lines = "; ".join(f"{p}:{n} {_short(t, 50)}" for p, n, t in hits[:3])
            return _short(f"{count.group(1)} files, best {', '.join(files[:4])}; lines: {lines}", limit)
    if step.action in READ_TOOLS:
        span = _read_span(step)
        if span:
            defs = [(a or c, b or d) for a, b, c, d in _DEFINES.findall(obs)]
            defs = [(n, name) for n, name in defs if not name.startswith("__")]
            seen = f"read lines {span[1]}-{span[2]} of {span[3]}"
            if defs:
                seen += "; defines " + ", ".join(f"{name} (line {n})" for n, name in defs[:6])
            return _short(seen, limit)
    return _short(obs, limit)


def summarize_step(number: int, step: Step, thought_chars: int = 100) -> str:
    """One line for an old step: `N. call → result (thought: …)`."""
    if not step.action:
        return f"{number}. (reply not usable) → {_short(step.observation, 80)}"
    if step.action == "answer":
        answer = step.args.get("answer", "") if isinstance(step.args, dict) else ""
        return f"{number}. answer({_short(json.dumps(answer, ensure_ascii=False), 80)}) → {step_result(step, 120)}"
    line = f"{number}. {render_call(step.action, step.args)} → {step_result(step)}"
    if step.thought.strip():
        line += f' (your thought: "{_short(step.thought, thought_chars)}")'
    return line
