"""Answers grounded in quoted lines (pure: the run's observations and a citation in, the line
it stands on out).

An answer cites `path:LINE` and quotes the line that states it. `ground` checks, mechanically,
that the quote is a line the tools showed in that file (a read, a definition, a search hit),
and at that line; a quote found at another line of the same file has its line corrected, and
one cited in a file no tool showed (a mistyped path) takes the one file that shows it. An
answer with no quote is accepted only as "not found in the code".

Where a grounded line stands also counts: in a docstring or comment (`in_prose`), within the
definition the question names (`spans`, `outside`), in an override of a method (`override_owner`).
The verify step (actors/agent/verify.py) judges whether the line answers the question.

Nothing here reads a file: the lines checked are those in the observations, so a run replays
from its log with the same verdicts.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from actors.agent.patches import DEFINITION_CHECKS, patched

NOT_FOUND = "Not found in the code"
_NOT_FOUND = re.compile(
    r"^\W*(not found|(i )?(could|can)(n'?t| ?not) find|no (such|answer|definition)\b|(it is |it's )?not (in|shown in) the code)",
    re.IGNORECASE,
)

# Observation shapes (what the tools print).
_READ_HEADER = re.compile(r"^(?P<path>[^\s,][^,]*?), (?:lines \d+-\d+ of|outline of)\b.*:$")
NUMBERED = re.compile(r"^\s*(?P<n>\d+): ?(?P<text>.*)$")
_HIT = re.compile(r"^\s*(?:\d+\. )?(?P<path>[^\s:(][^:(]*?):(?P<n>\d+): (?P<text>.*)$")
_COUNTED = re.compile(r"^\s*(?:\d+\. )?(?P<path>[^\s:(]+?)(?::| \().*?\bline (?P<n>\d+): (?P<text>.*?)\)?$")
_CUT = re.compile(r"\s*(…\[\+\d+ chars\]|…|\.\.\.)$")

# path:LINE, path:LINE-LINE, "path line LINE", "path, lines A-B"
SOURCE = re.compile(
    r"(?P<path>(?:[\w.-]+/)*[\w.-]+\.[A-Za-z0-9]+)(?::|,? lines? |#L)(?P<n>\d+)(?:\s*-\s*(?P<m>\d+))?"
)
_BACKTICKS = re.compile(r"`{1,3}([^`]+?)`{1,3}")


def norm(text: str) -> str:
    return " ".join(_CUT.sub("", str(text)).split())


def shown_lines(observations: Iterable[str]) -> dict[str, dict[int, str]]:
    """path → line number → text, for every numbered line the observations showed."""
    out: dict[str, dict[int, str]] = {}
    for obs in observations:
        path = None
        for raw in str(obs or "").splitlines():
            header = _READ_HEADER.match(raw.strip())
            if header:
                path = header["path"].strip()
                continue
            m = NUMBERED.match(raw)
            if path is not None and m:
                out.setdefault(path, {})[int(m["n"])] = m["text"]
                continue
            path = None
            for pattern in (_HIT, _COUNTED):
                hit = pattern.match(raw)
                if hit:
                    out.setdefault(hit["path"].strip(), {}).setdefault(int(hit["n"]), hit["text"])
                    break
    return out


@dataclass(frozen=True)
class Citation:
    path: str
    line: int
    quote: str


def citation(args: Mapping[str, Any], answer: str) -> Citation | None:
    """The answer step's `source` and `quote` (or what the answer text holds: a `path:LINE`
    and a quote in backticks); None when there is no quote."""
    source = str(args.get("source") or args.get("evidence") or args.get("citation") or "")
    quote = args.get("quote") or args.get("line_text") or ""
    if isinstance(quote, list):
        quote = "\n".join(str(q) for q in quote)
    quote = str(quote).strip().strip("`").strip()
    m = SOURCE.search(source) or SOURCE.search(answer)
    if not quote:
        q = _BACKTICKS.findall(answer)
        quote = max(q, key=len).strip() if q else ""
    if not quote or m is None:
        if quote and m is None and args.get("line") is not None and source:
            try:
                return Citation(source.strip(), int(args["line"]), quote)
            except (TypeError, ValueError):
                return None
        return None
    return Citation(m["path"], int(m["n"]), quote)


def is_not_found(answer: str) -> bool:
    return bool(_NOT_FOUND.match(answer.strip()))


@dataclass(frozen=True)
class Grounded:
    """A checked citation: the quote is at `path:line` (the line as the tools showed it)."""

    path: str
    line: int
    quote: str
    text: str  # the shown line


def same_file(a: str, b: str) -> bool:
    a, b = a.strip("./").lower(), b.strip("./").lower()
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def ground(
    shown: Mapping[str, Mapping[int, str]], cite: Citation, patches: Collection[str] = ()
) -> Grounded | str:
    """The citation checked against the shown lines, or why it is refused (for the model).
    With patch definition_checks, a quote that runs on past a shown line naming a definition
    (`def take_snapshot(` quoted with the signature the model imagined) is grounded at that
    line. With patch quote_checks, a quote that is not in the cited file but is in exactly one
    file the tools showed is grounded there (the path was wrong, the line is real), and single
    and double quotes are the same."""
    def_lines, relocate = patched(patches, DEFINITION_CHECKS), patched(patches, "quote_checks")
    q_lines = [norm(x) for x in cite.quote.splitlines() if norm(x)]
    if not q_lines or len("".join(q_lines)) < 3:
        return "Your quote is empty. Copy the line that states the answer exactly as an observation shows it."
    first = q_lines[0].strip("`'\" ").lower()
    if relocate:  # 'x' quoted as "x": the same line
        first = first.replace('"', "'")
    places: list[tuple[str, int, str]] = []
    for path, lines in shown.items():
        for n, text in lines.items():
            t = norm(text).lower()
            if relocate:
                t = t.replace('"', "'")
            within = len(t) >= 20 or (def_lines and len(t) >= 10 and re.match(r"(async )?(def|class) \w{4,}", t))
            if first and (first in t or (within and t in first)):
                places.append((path, n, text))
    here = [p for p in places if same_file(p[0], cite.path)]
    if here:
        path, n, text = min(here, key=lambda p: abs(p[1] - cite.line))
        return Grounded(path, n, q_lines[0], text.strip())
    if places and (relocate or not any(same_file(p, cite.path) for p in shown)) and len({p[0] for p in places}) == 1:
        # a file no tool showed (a mistyped path): the one file that shows the quote is the source
        path, n, text = places[0]
        return Grounded(path, n, q_lines[0], text.strip())
    if places:
        path, n, _ = places[0]
        return (
            f"Your quote is not in {cite.path} as the tools showed it; it is in {path} line {n}. "
            "Correct the answer's file, or quote a line of the file you name."
        )
    return (
        f"Your quote `{short(cite.quote)}` is not a line any observation showed in {cite.path}. "
        "Quote the line that states the answer exactly as an observation shows it "
        "(read_file or find_definition it first), with its path:LINE; "
        f'or answer "{NOT_FOUND}" if the code does not show it.'
    )


def class_lines(shown: Mapping[str, Mapping[int, str]]) -> dict[str, tuple[str, ...]]:
    """class → its bases, from every `class Name(Bases):` line the tools showed."""
    out: dict[str, tuple[str, ...]] = {}
    for lines in shown.values():
        for text in lines.values():
            m = re.match(r"\s*class\s+(\w+)\s*\(([^)]*)\)", text)
            if m:
                out[m.group(1)] = tuple(b.split(".")[-1].strip() for b in m.group(2).split(",") if b.strip())
    return out


def short(text: str, limit: int = 120) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


_DEFINED_AT = re.compile(r"^(?P<what>.+?) is defined in (?P<path>\S+) line (?P<n>\d+)\b")


def in_prose(lines: Mapping[int, str], n: int) -> bool:
    """Whether shown line `n` is prose, not code: a comment, or a line inside (or opening) a
    triple-quoted string, judged from the shown lines just above it (back to a gap)."""
    text = lines.get(n, "").strip()
    if text.startswith("#") or re.match(r"[rbuf]?(\"\"\"|\'\'\')", text):
        return True
    first = n
    while first - 1 in lines:
        first -= 1
    quotes = sum(len(re.findall(r"\"\"\"|\'\'\'", lines[k])) for k in range(first, n))
    return quotes % 2 == 1


def header_cited(cite: Citation) -> Citation:
    """A quote of find_definition's header ("class X(Base) is defined in x.py line 7"): the
    line it names, quoted as the definition's own first line."""
    m = _DEFINED_AT.match(norm(cite.quote).strip("`'\" "))
    if m is None:
        return cite
    name = m["what"].split()[-1]  # "class X(Base)" → X(Base); "method A.b" → b
    name = name if "(" in name else name.split(".")[-1]
    return Citation(m["path"], int(m["n"]), name)


# (an override's lines shown under a method, `… of N (override C.m):`, are not the method's own)
_SPAN = re.compile(r"^(?P<path>[^\s,][^,\n]*?), (?:outline of [^,\n]+, )?lines (?P<a>\d+)-(?P<b>\d+) of \d+(?!\d| \(override)", re.M)


def spans(observation: str) -> list[tuple[str, int, int]]:
    """(path, first, last line) of each definition a find_definition observation shows."""
    return [(m["path"].strip(), int(m["a"]), int(m["b"])) for m in _SPAN.finditer(observation)]


_OVERRIDE_SPAN = re.compile(
    r"^(?P<path>[^\s,][^,\n]*?), lines (?P<a>\d+)-(?P<b>\d+) of \d+ \(override (?P<owner>[\w.]+)\):$", re.M
)


def override_owner(observations: Iterable[str], cite: Grounded) -> str | None:
    """The class whose override of a method find_definition showed at the cited line (its
    `… (override Class.method):` header), or None."""
    for obs in observations:
        for m in _OVERRIDE_SPAN.finditer(str(obs or "")):
            if same_file(m["path"], cite.path) and int(m["a"]) <= cite.line <= int(m["b"]):
                return m["owner"].rpartition(".")[0] or None
    return None


def outside(cite: Grounded, scope: Iterable[tuple[str, int, int]]) -> tuple[str, int, int] | None:
    """The definition the question names, when the cited line is not within any of its
    spans (else None)."""
    scope = list(scope)
    if not scope or any(same_file(p, cite.path) and a <= cite.line <= b for p, a, b in scope):
        return None
    return scope[0]


def shows_overrides(observations: Iterable[str]) -> bool:
    """Whether any observation shows an override of a method (find_definition's `(override C.m)`)."""
    return any(_OVERRIDE_SPAN.search(str(o or "")) for o in observations)
