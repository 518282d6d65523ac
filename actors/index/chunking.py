"""Language-aware recursive chunking with exact line ranges (seed 000 §2.3, seed 003).

The splitting itself is langchain's `RecursiveCharacterTextSplitter` — the splitter seed 000
names — with its per-language separators (`\\nclass `, `\\ndef ` for Python, `\\nfunc ` for
Go, headings for Markdown, ...), plain paragraphs/lines/words for everything else. What we
add is what an index needs and the library does not give: each chunk keeps its path and its
exact 1-based line range, found from the chunk's offset in the file.

`length` decides what "size" means: characters by default (the repository index), tokens
for seed 003's 500-token chunks (`actors.index.tokens.count_tokens`). Overlap is bounded by
`overlap` in the same unit.

`with_headers` gives each chunk its `header`: the classes and functions that enclose its
first line (`class Ledger > def record`), found with Python's `ast` for Python files; other
languages (and Python that does not parse) get none. The index puts the header next to the
path in the text it embeds, so a chunk from the middle of a class is "about" that class even
when its body never names it. Pure: no I/O, no model.
"""

from __future__ import annotations

import ast
import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import PurePosixPath

# langchain_text_splitters (with langchain_core, about 0.3 s) is imported where a text is cut,
# not here: this module is loaded with every tool registered, e.g. by `chorus --help`.

# chunk_text's default size, in characters (about 30-50 lines of code). The repository index
# no longer uses it: it cuts to the embedder's window (`window_chunks`), because at 1,200
# characters half of the chunks were longer than MiniLM's 256 tokens and 8-11% of the code
# never reached a vector (measured on eventsourcing and jinja2).
INDEX_CHUNK_SIZE = 1200
INDEX_CHUNK_OVERLAP = 120
# Tokens all-MiniLM-L6-v2 reads of a text ([CLS] and [SEP] included); the rest is cut off.
EMBED_WINDOW = 256

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
    header: str = ""  # enclosing classes/functions ("class A > def f"), from `with_headers`

    @property
    def lines(self) -> str:
        return f"{self.start_line}-{self.end_line}"


def language_of(path: str) -> str:
    return _BY_SUFFIX.get(PurePosixPath(path).suffix.lower(), "text")


def separators_for(language: str) -> list[str]:
    """The library's separators for a language it knows; paragraphs, lines, words otherwise."""
    from langchain_text_splitters import Language, RecursiveCharacterTextSplitter

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
    from langchain_text_splitters import RecursiveCharacterTextSplitter

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
    chunks: list[Chunk] = []
    for doc in splitter.create_documents([text]):
        start = doc.metadata["start_index"]
        body = doc.page_content
        previous = chunks[-1].offset if chunks else 0
        if start < previous:  # the library could not place it (-1): search on from the chunk before,
            # not from the top, where a repeated text would be found again (out of order)
            found = text.find(body, previous)
            start = found if found >= 0 else text.find(body)
        first = _line_of(line_starts, start)
        last = _line_of(line_starts, start + max(len(body) - 1, 0))
        chunks.append(Chunk(path=path, start_line=first, end_line=last, text=body, language=lang, offset=start))
    return chunks


def window_chunks(
    path: str, text: str, *, length: Callable[[str], int], prefix: str = "", window: int = EMBED_WINDOW
) -> list[Chunk]:
    """`text` cut so that each chunk, after `prefix` (what is embedded before it, e.g. its path),
    fits the embedder's `window` of tokens as `length` counts them; neighbours share a tenth."""
    room = window - 2 - length(prefix)  # [CLS] and [SEP]
    if room < 16:
        raise ValueError(f"{path}: {prefix!r} leaves {room} tokens of a {window}-token window")
    return chunk_text(path, text, size=room, overlap=room // 10, length=length)


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


def with_headers(chunks: Sequence[Chunk], text: str) -> list[Chunk]:
    """`chunks` (all cut from `text`, one file) each with the header of its enclosing
    definitions; unchanged (no header) where the language is not Python or it does not parse."""
    scopes = _python_scopes(text) if chunks and chunks[0].language == "python" else []
    if not scopes:
        return list(chunks)
    out = []
    for c in chunks:
        names = [name for first, last, name in scopes if first <= c.start_line <= last]
        out.append(replace(c, header=" > ".join(names)) if names else c)
    return out


def _python_scopes(text: str) -> list[tuple[int, int, str]]:
    """(first line, last line, "class X" / "def f") of every class and function, outer first."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return []
    out: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):  # breadth first: an outer definition before its inner ones
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            kind = "class" if isinstance(node, ast.ClassDef) else "def"
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            out.append((first, node.end_lineno or node.lineno, f"{kind} {node.name}"))
    return sorted(out, key=lambda s: (s[0], -s[1]))
