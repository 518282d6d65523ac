"""Keyword occurrences per file (seed 003's `search_keyword`): case-insensitive, counted per
file, files sorted by their count.

The same counting serves three users: the `search_keyword` tool (the model's keywords),
`semantic_file_search` (the HyDE keywords pick its candidate files) and the retrieval
evaluation's keyword ranker (a question's terms). Counting and ranking are pure; reading
the files is `load_texts`, the one function here that touches the disk.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from actors.tools.paths import MAX_FILE_BYTES, is_binary, read_small, rel_path, resolve_root, walk_files
from actors.tools.search import DEFINITION_LINE, STOP_WORDS, count_term, same_length_lower

_TOKEN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*[A-Za-z0-9_]|[A-Za-z0-9_]")


@dataclass(frozen=True)
class FileCount:
    path: str  # relative, "/"-separated
    total: int  # occurrences of all terms together
    counts: tuple[tuple[str, int], ...]  # (term, occurrences), in the terms' order
    line: int  # the line to look at: the first definition holding a term, else the first hit
    text: str  # that line, stripped


# -- pure ------------------------------------------------------------------------------------


def keyword_terms(text: str) -> list[str]:
    """The keywords in what a model passed to `search_keyword`, lower case, in order.

    Words are split on spaces and commas; stop-words are dropped unless nothing else is left.
    Identifiers keep their dots and dashes (`os.path`, `wal-mode`)."""
    words = [w.lower() for w in _TOKEN.findall(str(text or ""))]
    content = [w for w in words if w not in STOP_WORDS]
    return list(dict.fromkeys(content or words))


def count_terms(text: str, terms: Sequence[str]) -> dict[str, int]:
    """Case-insensitive occurrences of each term. Terms of three letters or fewer count only
    where a word or identifier piece starts, so 'id' is not found inside 'valid'."""
    lower = same_length_lower(text)
    return {t: count_term(t, text, lower) for t in terms}


def count_text(path: str, text: str, terms: Sequence[str]) -> FileCount | None:
    """The file's occurrences of `terms`, or None when it holds none of them. The line it
    points at is where a term is defined (`def`, `class`, `CONSTANT =`) if anywhere, since a
    small model reads on from there; else the first line holding a term."""
    counts = count_terms(text, terms)
    total = sum(counts.values())
    if not total:
        return None
    lower = same_length_lower(text)
    first = min(_first_index(t, text, lower) for t in terms if counts[t])
    number = text.count("\n", 0, first) + 1
    found = [t for t in terms if counts[t]]
    for n, line in enumerate(text.splitlines()[number - 1 :], number):
        if DEFINITION_LINE.match(line) and any(count_term(t, line, same_length_lower(line)) for t in found):
            number = n
            break
    lines = text.splitlines()
    shown = lines[number - 1].strip() if number <= len(lines) else ""
    return FileCount(path, total, tuple(counts.items()), number, shown)


def _first_index(term: str, text: str, lower: str) -> int:
    """Where the first occurrence `count_term` counts begins."""
    i = lower.find(term)
    while i > 0 and len(term) <= 3:
        before, here = text[i - 1], text[i]
        if not before.isalnum() or (before.islower() and here.isupper()):
            break
        i = lower.find(term, i + 1)
    return max(i, 0)


def rank(found: Iterable[FileCount], limit: int | None = None) -> list[FileCount]:
    """Most occurrences first; ties by path, so the order never depends on the disk."""
    ordered = sorted(found, key=lambda f: (-f.total, f.path))
    return ordered if limit is None else ordered[:limit]


def rank_texts(texts: Mapping[str, str], terms: Sequence[str], limit: int | None = None) -> list[FileCount]:
    found = (count_text(path, text, terms) for path, text in texts.items())
    return rank((f for f in found if f is not None), limit)


# -- reading -----------------------------------------------------------------------------------


def load_texts(base: str | os.PathLike[str], under: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """The text files under `under` (default: `base`), keyed by their path relative to `base`.

    Skipped, as the other file tools skip them: junk folders (.git, __pycache__, ...),
    binary files, files over 1 MB, symlinks (so nothing outside the folder is read) and
    FIFOs, sockets and devices (never opened)."""
    root = resolve_root(base)
    top = resolve_root(under) if under is not None else root
    out: dict[str, str] = {}
    for path in walk_files(top):
        data = read_small(root, path, MAX_FILE_BYTES)  # None: too big, gone, or no regular file
        if data is None or is_binary(data):
            continue
        out[rel_path(path, root)] = data.decode("utf-8", errors="replace")
    return out


def relative_files(texts: Mapping[str, str], prefix: str) -> dict[str, str]:
    """The entries of `texts` under folder `prefix` ("" for all)."""
    if not prefix:
        return dict(texts)
    head = prefix.rstrip("/") + "/"
    return {p: t for p, t in texts.items() if p.startswith(head)}
