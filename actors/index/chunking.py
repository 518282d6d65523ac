"""Language-aware recursive chunking with exact line ranges (seed 000 §2.3, seed 003).

The splitting itself is langchain's `RecursiveCharacterTextSplitter` — the splitter seed 000
names — with its per-language separators (`\\nclass `, `\\ndef ` for Python, `\\nfunc ` for
Go, headings for Markdown, ...), plain paragraphs/lines/words for everything else. What we
add is what an index needs and the library does not give: each chunk keeps its path and its
exact 1-based line range, found from the chunk's offset in the file.

`length` decides what "size" means: characters by default (the repository index), tokens
for seed 003's 500-token chunks (`actors.index.tokens.count_tokens`). Overlap is bounded by
`overlap` in the same unit. Pure: no I/O, no model.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath

from langchain_text_splitters import Language, RecursiveCharacterTextSplitter

# Characters per chunk for the repository index: about 30-50 lines of code, which fits the
# 256-token window of all-MiniLM-L6-v2 without much truncation.
INDEX_CHUNK_SIZE = 1200
INDEX_CHUNK_OVERLAP = 120

_BY_SUFFIX: dict[str, str] = {
    ".py": "python", ".pyi": "python",
    ".js": "js", ".jsx": "js", ".mjs": "js", ".cjs": "js",
    ".ts": "ts", ".tsx": "ts",
    ".go": "go", ".rs": "rust", ".java": "java", ".kt": "kotlin", ".scala": "scala",
    ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".hpp": "cpp", ".cxx": "cpp",
    ".cs": "csharp", ".rb": "ruby", ".php": "php", ".swift": "swift", ".lua": "lua",
    ".hs": "haskell", ".ex": "elixir", ".exs": "elixir", ".sol": "sol",
    ".md": "markdown", ".markdown": "markdown", ".rst": "rst", ".tex": "latex",
    ".html": "html", ".htm": "html", ".proto": "proto",
}


@dataclass(frozen=True)
class Chunk:
    path: str  # relative to the repository root, "/"-separated
    start_line: int  # 1-based, inclusive
    end_line: int  # inclusive
    text: str
    language: str  # "python", "markdown", ... or "text"
    offset: int = 0  # of the first character in the file

    @property
    def lines(self) -> str:
        return f"{self.start_line}-{self.end_line}"


def language_of(path: str) -> str:
    return _BY_SUFFIX.get(PurePosixPath(path).suffix.lower(), "text")


def separators_for(language: str) -> list[str]:
    """The library's separators for a language it knows; paragraphs, lines, words otherwise."""
    try:
        return RecursiveCharacterTextSplitter.get_separators_for_language(Language(language))
    except ValueError:
        return ["\n\n", "\n", " ", ""]


def chunk_text(
    path: str,
    text: str,
    *,
    size: int = INDEX_CHUNK_SIZE,
    overlap: int = INDEX_CHUNK_OVERLAP,
    length: Callable[[str], int] = len,
    language: str | None = None,
) -> list[Chunk]:
    """`text` (the content of `path`) cut into chunks of at most about `size` (by `length`),
    neighbours sharing at most `overlap`, each with its exact line range."""
    if overlap >= size:
        raise ValueError(f"overlap ({overlap}) must be smaller than size ({size})")
    lang = language or language_of(path)
    if not text.strip():
        return []
    splitter = RecursiveCharacterTextSplitter(
        separators=separators_for(lang),
        chunk_size=size,
        chunk_overlap=overlap,
        length_function=length,
        is_separator_regex=True,  # the library's language separators are patterns
        keep_separator=True,
        add_start_index=True,
    )
    line_starts = _line_starts(text)
    chunks = []
    for doc in splitter.create_documents([text]):
        start = doc.metadata["start_index"]
        body = doc.page_content
        if start < 0:  # the library could not place it (should not happen): search ourselves
            start = text.find(body)
        first = _line_of(line_starts, start)
        last = _line_of(line_starts, start + max(len(body) - 1, 0))
        chunks.append(Chunk(path=path, start_line=first, end_line=last, text=body, language=lang, offset=start))
    return chunks


def _line_starts(text: str) -> list[int]:
    starts = [0]
    pos = text.find("\n")
    while pos != -1:
        starts.append(pos + 1)
        pos = text.find("\n", pos + 1)
    return starts


def _line_of(starts: list[int], offset: int) -> int:
    """1-based line number of character `offset`."""
    return bisect.bisect_right(starts, offset)
