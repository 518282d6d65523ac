"""The repository index's third ranking: chunks that define a code name the question gives.

A question that names `ChunkedReader` or `maybe_extract_lines` is about the place where that
name is defined, whose body need not repeat it: BM25 prefers a file that says the name many
times (a test, a caller), and the dense side may not weigh a rare identifier at all.

- `defined_names(text, language)`: the names a chunk defines: Python `class`/`def` lines and
  module-level assignments (`NAME = ...`, `name: T = ...`); in other languages the names after
  `class`, `function`, `func`, `fn`, `struct`, `interface`, `trait`, `enum`, `type`.
- `question_names(query)`: the names a question gives that look like code, not like words:
  dotted (`Packer.pack`, both parts), snake_case, CamelCase with an inner capital, CONSTANTS,
  and a capitalised word that does not start the sentence (`the Packer class`).
- `DefinitionIndex`: built once from the same chunk payloads as the BM25 view, so it is
  derived, never a second source of truth; `rank(query)` orders the chunks that define the
  question's names, most names first.

Pure: no I/O, no Ray.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_PY_DEF = re.compile(r"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+([A-Za-z_]\w*)", re.M)
_PY_ASSIGN = re.compile(r"^([A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?=(?!=)", re.M)
_OTHER_DEF = re.compile(
    r"\b(?:class|function|func|fn|struct|interface|trait|enum|type)[ \t]+(?:\([^)]*\)[ \t]*)?([A-Za-z_]\w*)"
)
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_SENTENCE_END = re.compile(r"[.?!:;]\s*$")


def defined_names(text: str, language: str = "python") -> set[str]:
    """The names `text` (a chunk) defines."""
    if language == "python":
        return set(_PY_DEF.findall(text)) | set(_PY_ASSIGN.findall(text))
    return set(_OTHER_DEF.findall(text))


def _code_shaped(word: str) -> bool:
    core = word.strip("_")
    if not core:
        return False
    return (
        "_" in word
        or any(c.isupper() for c in core[1:]) and any(c.islower() for c in core)  # CamelCase, maybe_Mixed
        or core.isupper() and len(core) > 1 and any(c.isalpha() for c in core)  # CONSTANT
    )


def question_names(query: str) -> list[str]:
    """The code names `query` gives, each once, in order (see the module's notes)."""
    out: list[str] = []
    for m in _TOKEN.finditer(query):
        token = m.group(0)
        parts = token.split(".")
        starts_sentence = not query[: m.start()].strip() or bool(_SENTENCE_END.search(query[: m.start()]))
        if len(parts) > 1:
            out += [p for p in parts if p]
            continue
        if _code_shaped(token) or (token[0].isupper() and not starts_sentence and len(token) > 2):
            out.append(token)
    seen: set[str] = set()
    return [n for n in out if not (n in seen or seen.add(n))]


class DefinitionIndex:
    """Which chunks define which names; built from `(text, language)` per chunk."""

    def __init__(self, documents: Sequence[tuple[str, str]]) -> None:
        self.size = len(documents)
        self._by_name: dict[str, list[int]] = {}
        for row, (text, language) in enumerate(documents):
            for name in defined_names(text, language):
                self._by_name.setdefault(name, []).append(row)

    def rank(self, query: str, *, limit: int = 50, allowed: Sequence[bool] | None = None) -> list[int]:
        """Rows of the chunks that define a name `query` gives: most names defined first, then
        names given earlier in the question first, then in order of the chunks."""
        scores: dict[int, tuple[int, int]] = {}
        names = question_names(query)
        for place, name in enumerate(names):
            for row in self._by_name.get(name, ()):
                if allowed is not None and not allowed[row]:
                    continue
                count, first = scores.get(row, (0, place))
                scores[row] = (count + 1, min(first, place))
        order = sorted(scores, key=lambda r: (-scores[r][0], scores[r][1], r))
        return order[:limit]
