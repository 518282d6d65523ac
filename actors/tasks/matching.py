"""Matching a plain-language request to an atomic task template (seed 001: "the system always
selects the highest-scoring candidate template"). Pure: no I/O, no model.

A template is scored by the words it shares with the request, weighted by where the template
says them (its name counts most, then its description, then its parameters' names and
descriptions) and by how rare each word is among the templates (a word every template uses
tells nothing). The score is the share of the request's content words the template explains,
so a one-word request that names a template scores high and a long request that merely
mentions a common word scores low. The best template above `threshold` wins; ties go to the
name that sorts first, so the choice is stable and replays as it ran.

Parameters are bound from the request: a required parameter about a file (its name says
path or file) takes the first path-like word (`README.md`, `src/app.py`); a template with one
required parameter otherwise takes the whole request. Parameters given explicitly win.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from actors.tasks.templates import AtomicTemplate

THRESHOLD = 0.2
WEIGHTS = {"name": 3.0, "description": 2.0, "params": 1.0}
STOPWORDS = frozenset(
    "a about an and are as at be by can could do does for from give how i in is it its me my of on or "
    "please should tell that the their them then there this to us was we what when where which "
    "who why will with would you your".split()
)
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_PATHLIKE = re.compile(r"(?:[\w.-]+/)*[\w-]+\.[A-Za-z0-9]{1,8}\b|(?:[\w.-]+/)+[\w.-]+")


def stem(word: str) -> str:
    """A light stem, enough that 'summarise', 'summarizes' and 'summary' meet."""
    w = word.lower().replace("ise", "ize")
    for suffix in (
        "ization", "izing", "ation", "ator", "izes", "ized", "ize", "ate", "ion", "ies", "ing", "or", "er", "es", "ed", "s", "y",
    ):  # fmt: skip
        if w.endswith(suffix) and len(w) - len(suffix) >= 4:
            return w[: -len(suffix)]
    return w


def _content(text: str) -> list[tuple[str, str]]:
    """(stem, word as written) for each content word of `text`."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", _PATHLIKE.sub(" ", text or ""))
    return [(stem(w), w.lower()) for w in _WORD.findall(spaced) if w.lower() not in STOPWORDS and len(w) > 1]


def words(text: str) -> list[str]:
    """Content words of `text`, stemmed; identifiers split on -, _, . and camelCase. Paths
    (`src/app.py`) are values for parameters, not words of the request: left out."""
    return [s for s, _ in _content(text)]


@dataclass(frozen=True)
class Candidate:
    name: str
    score: float
    matched: tuple[str, ...]  # the request's words the template explains, as written

    def why(self) -> str:
        shared = ", ".join(self.matched) or "nothing"
        return f"{self.name} scores {self.score:.2f}: it shares {shared} with the request"


@dataclass(frozen=True)
class Match:
    template: str
    score: float
    why: str
    params: dict[str, Any]
    missing: list[str] = field(default_factory=list)  # required parameters left unbound
    candidates: list[Candidate] = field(default_factory=list)


def _fields(t: AtomicTemplate) -> dict[str, set[str]]:
    return {
        "name": set(words(t.name)),
        "description": set(words(t.description)),
        "params": set(words(" ".join(f"{p.name} {p.description}" for p in t.params))),
    }


def score_templates(request: str, templates: Iterable[AtomicTemplate]) -> list[Candidate]:
    """Every template, best first."""
    written: dict[str, str] = {}
    for s, w in _content(request):
        written.setdefault(s, w)
    asked = list(written)
    fields = {t.name: _fields(t) for t in templates}
    if not asked or not fields:
        return [Candidate(name, 0.0, ()) for name in sorted(fields)]
    n = len(fields)
    seen_in = {w: sum(1 for f in fields.values() if any(w in s for s in f.values())) for w in asked}
    idf = {w: math.log(1 + n / seen_in[w]) if seen_in[w] else 0.0 for w in asked}
    most = sum(WEIGHTS["name"] * math.log(1 + n) for _ in asked)  # every word in a unique name
    scored = []
    for name, f in fields.items():
        total, matched = 0.0, []
        for w in asked:
            weight = max((WEIGHTS[k] for k, s in f.items() if w in s), default=0.0)
            if weight:
                total += weight * idf[w]
                matched.append(written[w])
        scored.append(Candidate(name, round(total / most, 4) if most else 0.0, tuple(matched)))
    return sorted(scored, key=lambda c: (-c.score, c.name))


def bind_params(request: str, template: AtomicTemplate, given: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The template's parameters from the request and `given`; and the required ones still unbound."""
    params = dict(given)
    needed = [p for p in template.params if p.required and p.default is None]
    paths = _PATHLIKE.findall(request)
    for p in needed:
        if p.name not in params and _about_files(p.name) and paths:
            params[p.name] = paths.pop(0)
    still = [p for p in needed if p.name not in params]
    if len(needed) == 1 and still and not _about_files(still[0].name):
        params[still[0].name] = request.strip()  # the template's one input: the request itself
        still = []
    return params, [p.name for p in still]


def _about_files(name: str) -> bool:
    return any(k in name.lower() for k in ("path", "file"))


def match_template(
    request: str,
    templates: Iterable[AtomicTemplate],
    given: Mapping[str, Any] | None = None,
    threshold: float = THRESHOLD,
) -> Match | None:
    """The highest-scoring template at or above `threshold`, with its parameters bound; None
    when no template scores that high."""
    pool = {t.name: t for t in templates}
    candidates = score_templates(request, pool.values())
    if not candidates or candidates[0].score < threshold:
        return None
    best = candidates[0]
    params, missing = bind_params(request, pool[best.name], given or {})
    return Match(best.name, best.score, best.why(), params, missing, candidates[:5])
