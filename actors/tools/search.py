"""`search_files`' engine: a question-like query split into weighted terms (words, joined
words, identifier pieces), files ranked by how many terms they contain, hits shown as
`path:LINE: text`, and advice when nothing matches."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from actors.tools.paths import (
    HIT_CHARS,
    MAX_FILE_BYTES,
    ToolInputError,
    is_binary,
    list_folder,
    read_small,
    rel_path,
    resolve_root,
    walk_files,
)

# -- query terms --------------------------------------------------------------------------

STOP_WORDS = frozenset(
    """
    a an the this that these those it its is are was were be been being am do does did done
    doing have has had having of in on at to for from by with without about into onto over
    under up down out off as than then so such and or nor not no yes but if else when where
    which what who whom whose why how there here any some all each every both either neither
    other another can could should would will shall may might must i me my we our you your he
    she they them their his her us one ones also only just very more most less least same own
    please tell show find give get gets got let lets say says said know need needs want wants
    look looks like used use uses using called call calls named name names does anything
    something thing things way ways kind sort whether via per
    """.split()
)
# Words too common in code questions to rank by alone. The first set still joins with the
# word before it to form an identifier ("persistence module" -> persistence_module).
WEAK_JOINABLE = frozenset(
    """
    method methods function functions module modules package packages variable variables
    attribute attributes field fields value values object objects type types instance
    instances error errors exception exceptions
    """.split()
)
WEAK_WORDS = WEAK_JOINABLE | frozenset(
    """
    class classes def file files code source library project repo repository defined define
    defines definition implement implements implemented implementation
    """.split()
)
_WORD = re.compile(r"[A-Za-z0-9_]+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


@dataclass(frozen=True)
class Term:
    text: str  # lower case, what is matched
    weight: float  # 1 for a word or a joined pair, 0.5 for a piece of an identifier
    kind: str  # "word" | "joined" | "piece"
    label: str = ""  # as the query spelled it, for display


def _stem(word: str) -> str:
    """Crude plural stripping; matching is by substring, so a stem still finds the plural."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3]
    if len(word) > 4 and word.endswith(("sses", "shes", "ches", "xes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def query_terms(query: str) -> list[Term]:
    """Search terms for a query, most specific first.

    Words (stop-words and punctuation dropped, plurals stemmed), the pieces of identifiers
    (`SQLiteRecorder` -> sqlite, recorder; `take_snapshot` -> take, snapshot) and adjacent
    words joined as identifiers ('persistence module' -> persistence_module, persistencemodule).
    Generic code words (class, file, method...) only count when nothing else is left.
    """
    raw = _WORD.findall(query)
    content = [w for w in raw if w.lower() not in STOP_WORDS and len(w) > 1]
    if not content:
        content = [w for w in raw if len(w) > 1]
    strong = [w for w in content if w.lower() not in WEAK_WORDS] or content

    terms: dict[str, Term] = {}

    def add(text: str, weight: float, kind: str, label: str = "") -> None:
        if len(text) < 2 or text in terms and terms[text].weight >= weight:
            return
        terms[text] = Term(text, weight, kind, label or text)

    for a, b in zip(content, content[1:]):
        la, lb = a.lower(), _stem(b.lower())
        if la in WEAK_WORDS or (b.lower() in WEAK_WORDS and b.lower() not in WEAK_JOINABLE):
            continue
        add(f"{la}_{lb}", 1.0, "joined")
        add(f"{la}{lb}", 1.0, "joined")
    for word in strong:
        low = word.lower()
        add(_stem(low), 1.0, "word", word)
        pieces = [p.lower() for p in re.split(r"_+", word) for p in _CAMEL.findall(p)]
        pieces = [p for p in pieces if len(p) >= 3 and p not in STOP_WORDS]
        if len(pieces) > 1:  # a compound identifier, not merely a mixed-case word like SQLite
            for piece in pieces:
                add(_stem(piece), 0.5, "piece")
    return sorted(terms.values(), key=lambda t: -t.weight)  # stable: query order within a weight


def _short_term(term: str) -> bool:
    """Short terms must start a word or an identifier piece, so 'id' does not match 'valid'."""
    return len(term) <= 3


def same_length_lower(text: str) -> str:
    """Lower case with the same length as `text`, so positions line up (unlike 'İ'.lower())."""
    low = text.lower()
    return low if len(low) == len(text) else "".join(c.lower()[:1] for c in text)


def count_term(term: str, text: str, lower: str) -> int:
    """Occurrences of `term` in `text` (`lower` is `same_length_lower(text)`); a short term
    counts only where a word or an identifier piece starts."""
    if not _short_term(term):
        return lower.count(term)
    n, i = 0, lower.find(term)
    while i >= 0:
        before = text[i - 1] if 0 < i <= len(text) else " "
        here = text[i] if i < len(text) else ""
        if not before.isalnum() or (before.islower() and here.isupper()):
            n += 1
        i = lower.find(term, i + 1)
    return n


# -- search ---------------------------------------------------------------------------------


@dataclass
class _FileHit:
    rel: str
    score: float
    occurrences: int
    matched: list[str]
    path: Path
    in_text: list[Term]


DEFINITION_LINE = re.compile(r"^\s*(?:async\s+def|def|class)\s|^[A-Z][A-Z0-9_]+\s*[:=]")
_DEFINED_NAME = re.compile(
    r"^[ \t]*(?:async[ \t]+def|def|class)[ \t]+(\w+)|^([A-Z][A-Z0-9_]+)[ \t]*[:=]", re.MULTILINE
)


def search(
    root: str | os.PathLike[str],
    query: str,
    *,
    max_files: int = 8,
    max_lines_per_file: int = 4,
    max_total_lines: int = 24,
    within: Path | None = None,
) -> str:
    """Files under root matching the query's terms, best first, with numbered matching lines.

    Files rank by the weight of distinct terms they match (in their text or their path),
    then by how often those terms occur. Each file shows its best lines (most terms, then
    definitions), in line order, as `path:LINE: text`. `within`: only this file or folder
    (a real path under root, already checked: `actors.tools.files.search_within`); one file
    shows up to `max_total_lines` of its lines.
    """
    base = resolve_root(root)
    query = _query_text(query)
    terms = _terms_of(query)

    hits: list[_FileHit] = []
    one_file = within is not None and within.is_file()
    if one_file:
        max_lines_per_file = max_total_lines
    for path in [within] if one_file else walk_files(base if within is None else within):
        hit = _score_file(path, base, terms)
        if hit is not None:
            hits.append(hit)

    words = [t for t in terms if t.kind == "word"] or terms
    shown_terms = ", ".join(f"'{w.label}'" for w in words)
    if not hits:
        return _no_match(base, query, [w.label for w in words])

    hits.sort(key=lambda h: (-h.score, -h.occurrences, h.rel))
    top = hits[:max_files]
    out = [
        f"{len(hits)} file{'s' if len(hits) != 1 else ''} match {shown_terms}"
        + (f"; the best {len(top)}:" if len(hits) > len(top) else ":")
    ]
    budget = max_total_lines
    for i, hit in enumerate(top):
        # the best files get their full share of lines; later ones at least one
        share = max(1, min(max_lines_per_file, budget - (len(top) - i - 1)))
        lines = _best_lines(hit, share, base)
        budget -= len(lines)
        found = ", ".join(w.label for w in words if w.text in hit.matched)
        found = found or ", ".join(t.label for t in terms if t.text in hit.matched[:3])
        out.append(f"{hit.rel} ({found}: {hit.occurrences} matches)")
        for number, text in lines:
            out.append(f"  {hit.rel}:{number}: {text}")
    missing = [w.label for w in words if not any(w.text in h.matched for h in hits)]
    if missing:
        out.append("No file contains " + ", ".join(f"'{m}'" for m in missing) + ".")
    out.append("Next: read_file(path, start_line) a few lines above a hit, or answer if a line above already shows it.")
    return "\n".join(out)


def lines_with(root: str | os.PathLike[str], path: Path, query: Any, max_lines: int = 24) -> list[int]:
    """The numbers of the lines of one file (a real path under root, already checked) that
    search_files would show for `query` in it, in line order."""
    base = resolve_root(root)
    hit = _score_file(path, base, _terms_of(_query_text(query)))
    return [] if hit is None else [number for number, _ in _best_lines(hit, max_lines, base)]


def _terms_of(query: str) -> list[Term]:
    terms = query_terms(query)
    if not terms:
        raise ToolInputError(
            "search_files needs a query with at least one word or identifier, e.g. query='snapshot'"
        )
    return terms


def _query_text(query: Any) -> str:
    if isinstance(query, (list, tuple)):
        return " ".join(str(q) for q in query)
    return "" if query is None else str(query)


def _score_file(
    path: Path,
    base: Path,
    terms: list[Term],
) -> _FileHit | None:
    data = read_small(base, path, MAX_FILE_BYTES)  # None: too big, gone, or no regular file
    if data is None or is_binary(data):
        return None
    text = data.decode("utf-8", errors="replace")
    lower = same_length_lower(text)
    rel = rel_path(path, base)
    rel_lower = rel.lower()

    counts = {t.text: count_term(t.text, text, lower) for t in terms}
    matched = [t for t in terms if counts[t.text] or t.text in rel_lower]
    if not matched:
        return None
    defined = " ".join(a or b for a, b in _DEFINED_NAME.findall(text)).lower()
    score = 0.0
    for term in matched:
        score += term.weight
        # a file named for the term, or defining a class/function/constant named for it,
        # is more likely the place than one that merely uses it
        if term.text in rel_lower:
            score += 0.5 * term.weight
        if counts[term.text] and term.text in defined:
            score += 0.5 * term.weight
    occurrences = sum(counts.values())
    in_text = [t for t in matched if counts[t.text]]
    return _FileHit(rel, score, occurrences, [t.text for t in matched], path, in_text)


def _best_lines(hit: _FileHit, max_lines: int, base: Path) -> list[tuple[int, str]]:
    """The file's lines with the most terms (definitions first on a tie), in line order."""
    if not hit.in_text:
        return []
    data = read_small(base, hit.path, MAX_FILE_BYTES)
    if data is None:
        return []
    text = data.decode("utf-8", errors="replace")
    ranked: list[tuple[float, int, int, str]] = []
    for number, line in enumerate(text.splitlines(), 1):
        line_lower = same_length_lower(line)
        line_score = sum(t.weight for t in hit.in_text if count_term(t.text, line, line_lower))
        if line_score:
            ranked.append((line_score, 1 if DEFINITION_LINE.match(line) else 0, number, line))
    ranked.sort(key=lambda r: (-r[0], -r[1], r[2]))
    return sorted((number, _trim(line, HIT_CHARS)) for _, _, number, line in ranked[:max_lines])


def _trim(line: str, limit: int) -> str:
    text = line.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _no_match(base: Path, query: str, words: list[str]) -> str:
    listing = list_folder(base, limit=20)
    shortest = min(words, key=len)
    ident = "".join(w[:1].upper() + w[1:] for w in words[:2]) if len(words) > 1 else words[0]
    parts = [
        f"No file under the root contains {', '.join(repr(w) for w in words)} (query {query.strip()!r}).",
        f"Try fewer or shorter words (e.g. query='{shortest}'), or a likely identifier"
        f" (e.g. '{ident}' or '{'_'.join(w.lower() for w in words[:2])}').",
    ]
    if listing:
        parts.append("Top of the root: " + ", ".join(listing) + ".")
    return "\n".join(parts)
