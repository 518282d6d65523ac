"""Two file tools for the ReAct agent, confined to a root folder: `search_files`, `read_file`.

They are shaped for a small model (Qwen2.5-Coder-1.5B): a question-like query is split into
terms and ranked, hits come back as `path:LINE: text` so the next step can read around a line,
reads are by line range with a note saying how to continue, and an empty result says what to
try next (SWE-agent's interface findings).

Errors: a call the model got wrong (path outside the root, no such file, binary file, a line
range past the end, an empty query) raises `ToolInputError`. Its message is ONE line written
for the model to read as its observation (the shell keeps only an exception's last line).
Anything else raised is a bug. A search with no hits is not an error: it returns advice.

The pure functions `search(root, query)` and `read(root, path, start_line, end_line)` do the
work; the registered `Tool` classes only hold the root and accept the argument names small
models tend to use instead (`file`, `keyword`, `line`, ...).
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from actors.runtime.registry import Registry, Tool


class ToolInputError(ValueError):
    """The model called a tool wrongly; the message is the observation to show it."""


# -- limits ---------------------------------------------------------------------------------

MAX_FILE_BYTES = 1_000_000  # bigger files are skipped by search (generated data, logs, dumps)
MAX_FILES_SCANNED = 20_000
READ_WINDOW = 50  # lines shown when no end_line is given (small models: keep prompts short)
READ_MAX_LINES = 120  # hard cap on one read
LINE_CHARS = 200  # longer lines are cut, in reads
HIT_CHARS = 120  # and in search hits

SKIP_DIRS = frozenset(
    {
        ".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv", "venv", ".tox",
        ".mypy_cache", ".pytest_cache", ".ruff_cache", ".hypothesis", ".idea", ".vscode",
        ".eggs",
    }
)  # fmt: skip
BINARY_SUFFIXES = frozenset(
    {
        ".pyc", ".pyo", ".so", ".dll", ".dylib", ".o", ".a", ".exe", ".bin", ".gguf", ".pt",
        ".npy", ".npz", ".png", ".jpg", ".jpeg", ".gif", ".ico", ".pdf", ".zip", ".gz", ".tgz",
        ".bz2", ".xz", ".whl", ".tar", ".sqlite", ".db", ".woff", ".woff2", ".ttf", ".jar",
    }
)  # fmt: skip


# -- root confinement ---------------------------------------------------------------------


def _root(root: str | os.PathLike[str]) -> Path:
    path = Path(root).expanduser().resolve()
    if not path.is_dir():
        raise NotADirectoryError(f"tool root {str(root)!r} is not a folder")
    return path


def _inside(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def _rel(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix() or "."


def resolve_in_root(root: str | os.PathLike[str], path: str) -> Path:
    """The real path of `path` (relative to root, or absolute inside it); refuses any escape.

    `..` segments, absolute paths elsewhere and symlinks whose target lies outside the root
    are all refused, whether or not the target exists.
    """
    base = _root(root)
    text = _clean_path(path)
    if not text:
        raise ToolInputError("read_file needs a path relative to the root folder, e.g. path='README.md'")
    candidate = base / text
    lexical = Path(os.path.normpath(candidate))
    if not _inside(lexical, base):
        hint = ""
        if Path(text).is_absolute():
            stripped = text.lstrip("/\\")
            if stripped and _inside(Path(os.path.normpath(base / stripped)), base) and (base / stripped).exists():
                hint = f" Did you mean path='{stripped}'?"
        raise ToolInputError(
            f"Refused: '{text}' is outside the root folder; paths are relative to the root, "
            f"as search_files prints them (e.g. '{_example_file(base)}').{hint}"
        )
    real = candidate.resolve()
    if not _inside(real, base):
        raise ToolInputError(
            f"Refused: '{text}' is a link that points outside the root folder; only files under the root can be read."
        )
    return real


def _clean_path(path: Any) -> str:
    text = str(path if path is not None else "").strip().strip("'\"`").strip()
    text = text.replace("\\", "/") if "\\" in text and "/" not in text else text
    while text.startswith("./"):
        text = text[2:]
    return text


def _example_file(root: Path) -> str:
    for entry in _listing(root):
        if not entry.endswith("/") and not entry.startswith("_"):
            return entry
    return "README.md"


def _listing(folder: Path, limit: int = 40) -> list[str]:
    """Names in `folder`, folders first with a trailing '/'; hidden, junk and links left out."""
    try:
        entries = sorted(folder.iterdir(), key=lambda p: (not p.is_dir(), p.name.lower()))
    except OSError:
        return []
    out = []
    for entry in entries:
        if entry.name in SKIP_DIRS or entry.name.startswith(".") or entry.name.endswith(".egg-info"):
            continue
        if entry.is_symlink():
            continue
        out.append(entry.name + "/" if entry.is_dir() else entry.name)
    return out[:limit]


def _walk(root: Path) -> Iterator[Path]:
    """Text-file candidates under root in a stable order; symlinks are not followed."""
    count = 0
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(
            d for d in dirnames if d not in SKIP_DIRS and not d.endswith(".egg-info")
        )
        for name in sorted(filenames):
            path = Path(dirpath) / name
            if path.suffix.lower() in BINARY_SUFFIXES:
                continue
            if path.is_symlink():  # outside: refused; inside: found where it really is
                continue
            count += 1
            if count > MAX_FILES_SCANNED:
                return
            yield path


def _is_binary(sample: bytes) -> bool:
    return b"\0" in sample[:8192]


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


def _lower(text: str) -> str:
    """Lower case with the same length as `text`, so positions line up (unlike 'İ'.lower())."""
    low = text.lower()
    return low if len(low) == len(text) else "".join(c.lower()[:1] for c in text)


def _count(term: str, text: str, lower: str) -> int:
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


_DEFINITION = re.compile(r"^\s*(?:async\s+def|def|class)\s|^[A-Z][A-Z0-9_]+\s*[:=]")
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
) -> str:
    """Files under root matching the query's terms, best first, with numbered matching lines.

    Files rank by the weight of distinct terms they match (in their text or their path),
    then by how often those terms occur. Each file shows its best lines (most terms, then
    definitions), in line order, as `path:LINE: text`.
    """
    base = _root(root)
    query = _query_text(query)
    terms = query_terms(query)
    if not terms:
        raise ToolInputError(
            "search_files needs a query with at least one word or identifier, e.g. query='snapshot'"
        )

    hits: list[_FileHit] = []
    for path in _walk(base):
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
        lines = _best_lines(hit, share)
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


def _query_text(query: Any) -> str:
    if isinstance(query, (list, tuple)):
        return " ".join(str(q) for q in query)
    return "" if query is None else str(query)


def _score_file(
    path: Path,
    base: Path,
    terms: list[Term],
) -> _FileHit | None:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    if _is_binary(data):
        return None
    text = data.decode("utf-8", errors="replace")
    lower = _lower(text)
    rel = _rel(path, base)
    rel_lower = rel.lower()

    counts = {t.text: _count(t.text, text, lower) for t in terms}
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


def _best_lines(hit: _FileHit, max_lines: int) -> list[tuple[int, str]]:
    """The file's lines with the most terms (definitions first on a tie), in line order."""
    if not hit.in_text:
        return []
    try:
        text = hit.path.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return []
    ranked: list[tuple[float, int, int, str]] = []
    for number, line in enumerate(text.splitlines(), 1):
        line_lower = _lower(line)
        line_score = sum(t.weight for t in hit.in_text if _count(t.text, line, line_lower))
        if line_score:
            ranked.append((line_score, 1 if _DEFINITION.match(line) else 0, number, line))
    ranked.sort(key=lambda r: (-r[0], -r[1], r[2]))
    return sorted((number, _trim(line, HIT_CHARS)) for _, _, number, line in ranked[:max_lines])


def _trim(line: str, limit: int) -> str:
    text = line.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _no_match(base: Path, query: str, words: list[str]) -> str:
    listing = _listing(base, limit=20)
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


# -- read -------------------------------------------------------------------------------------

# "a.py:120", "a.py:120: text", "a.py#L120", "a.py, line 120": a path copied from a hit
PATH_LINE = re.compile(r"^(?P<path>.+?)(?::|#L|, line |\s+line\s+)(?P<line>\d+)(?::.*)?$")


def read(
    root: str | os.PathLike[str],
    path: str,
    start_line: int = 1,
    end_line: int = 0,
    *,
    window: int = READ_WINDOW,
    max_lines: int = READ_MAX_LINES,
) -> str:
    """Lines `start_line..end_line` of a file under root, numbered (end_line 0: a window).

    A path copied from a search hit (`path:LINE` or `path:LINE: text`) reads around that
    line. A folder gives its listing.
    """
    base = _root(root)
    text = _clean_path(path)
    start = _as_int(start_line, "start_line", 1)
    end = _as_int(end_line, "end_line", 0)

    target = _locate(base, text)
    if target is None:
        m = PATH_LINE.match(text)
        if m and _locate(base, m["path"]) is not None:
            text = m["path"]
            target = _locate(base, text)
            if start <= 1 and end <= 0:
                start = max(1, int(m["line"]) - 5)
    if target is None:
        resolve_in_root(base, text)  # refuses escapes with the proper message
        raise ToolInputError(_not_found(base, text))

    rel = _rel(target, base)
    if target.is_dir():
        entries = _listing(target, limit=60)
        shown = ", ".join(entries) if entries else "nothing"
        return f"'{rel}' is a folder, not a file. It contains: {shown}. Call read_file on one of its files."
    try:
        data = target.read_bytes()
    except OSError as e:
        raise ToolInputError(f"Cannot read '{rel}': {e.strerror or e}.") from None
    if _is_binary(data) or target.suffix.lower() in BINARY_SUFFIXES:
        raise ToolInputError(
            f"'{rel}' is a binary file ({len(data)} bytes); read_file shows text files only. "
            "Use search_files to find source or text files."
        )
    lines = data.decode("utf-8", errors="replace").splitlines()
    total = len(lines)
    if total == 0:
        return f"'{rel}' is empty (0 lines)."

    start = max(1, start)
    if start > total:
        raise ToolInputError(
            f"'{rel}' has {total} lines; start_line={start} is past the end. "
            f"Read with start_line between 1 and {total}."
        )
    if end <= 0 or end < start:
        end = start + window - 1
    capped = end - start + 1 > max_lines
    if capped:
        end = start + max_lines - 1
    end = min(end, total)

    width = len(str(end))
    header = f"{rel}, lines {start}-{end} of {total}:"
    body = [f"{n:>{width}}: {_cut(lines[n - 1], LINE_CHARS)}" for n in range(start, end + 1)]
    out = [header, *body]
    if end < total:
        note = f"(showing lines {start}-{end} of {total}; to continue read start_line={end + 1}"
        out.append(note + (f"; at most {max_lines} lines per read)" if capped else ")"))
    else:
        out.append(f"(end of file: {total} lines)")
    return "\n".join(out)


def _as_int(value: Any, name: str, default: int) -> int:
    if value is None or value == "":
        return default
    if isinstance(value, bool):
        raise ToolInputError(f"{name} must be a whole number, not {value!r}")
    try:
        return int(float(str(value).strip()))
    except ValueError:
        raise ToolInputError(f"{name} must be a whole number, e.g. {name}=1; got {value!r}") from None


def _locate(base: Path, text: str) -> Path | None:
    """The existing path under root that `text` names, or None.

    Tolerated: a leading root folder name ('pkg/x.py' when root is .../pkg). Refused
    (ToolInputError): anything resolving outside the root.
    """
    if not text:
        raise ToolInputError("read_file needs a path relative to the root folder, e.g. path='README.md'")
    candidates = [text]
    first, _, rest = text.partition("/")
    if rest and first == base.name:
        candidates.append(rest)
    for candidate in candidates:
        path = resolve_in_root(base, candidate)
        if path.exists():
            return path
    return None


def _not_found(base: Path, text: str) -> str:
    name = Path(text).name
    all_files = [_rel(p, base) for p in _walk(base)]
    same_name = [f for f in all_files if Path(f).name == name][:5]
    close = difflib.get_close_matches(text, all_files, n=5, cutoff=0.6)
    by_name = {Path(f).name: f for f in all_files}
    close += [by_name[n] for n in difflib.get_close_matches(name, list(by_name), n=3, cutoff=0.7)]
    suggestions = list(dict.fromkeys(same_name + close))[:6]
    msg = f"No file '{text}' under the root."
    if suggestions:
        msg += " Did you mean: " + ", ".join(suggestions) + "?"
    parent = (base / text).parent
    folder = parent if parent != base and parent.is_dir() and _inside(parent.resolve(), base) else base
    listing = _listing(folder, limit=15)
    if listing:
        where = "the root" if folder == base else f"'{_rel(folder.resolve(), base)}'"
        msg += f" Files in {where}: " + ", ".join(listing) + "."
    return msg + " Use a path exactly as search_files prints it."


def _cut(line: str, limit: int) -> str:
    line = line.rstrip()
    return line if len(line) <= limit else line[:limit] + f" …[+{len(line) - limit} chars]"


# -- the registered tools ----------------------------------------------------------------------

_QUERY_ALIASES = ("query", "q", "keyword", "keywords", "pattern", "text", "term", "terms", "search", "words")
_PATH_ALIASES = ("path", "file", "file_path", "filepath", "filename", "file_name", "name")
_START_ALIASES = ("start_line", "start", "line", "line_start", "from_line", "begin", "offset")
_END_ALIASES = ("end_line", "end", "line_end", "to_line", "stop", "until")


def _pick(args: dict[str, Any], aliases: tuple[str, ...]) -> Any:
    lowered = {k.lower(): v for k, v in args.items()}
    for alias in aliases:
        if alias in lowered and lowered[alias] not in (None, ""):
            return lowered[alias]
    return None


class _RootTool(Tool):
    def __init__(self, root: str, **config: Any) -> None:
        super().__init__(root=root, **config)
        self.root = str(_root(root))


@Registry.register_tool("search_files")
class SearchFiles(_RootTool):
    description = (
        "Search every file under the root for words or identifiers (case-insensitive; several "
        "words are matched separately and files ranked by how many they contain). Shows the "
        "best files with matching lines as path:LINE: text."
    )

    def execute(self, query: str = "", **extra: Any) -> str:
        value = query if query not in (None, "") else _pick(extra, _QUERY_ALIASES)
        if value in (None, ""):
            raise ToolInputError("search_files needs a query, e.g. search_files(query='snapshot')")
        return search(self.root, value)

    @classmethod
    def signature(cls) -> str:
        return f"{cls.name}(query: str)"


@Registry.register_tool("read_file")
class ReadFile(_RootTool):
    description = (
        "Read a file under the root with line numbers, from start_line to end_line "
        f"(end_line 0: {READ_WINDOW} lines; at most {READ_MAX_LINES} per call)."
    )

    def execute(self, path: str = "", start_line: int = 1, end_line: int = 0, **extra: Any) -> str:
        value = path if path not in (None, "") else _pick(extra, _PATH_ALIASES)
        if value in (None, ""):
            raise ToolInputError("read_file needs a path, e.g. read_file(path='README.md', start_line=1)")
        if start_line in (None, "", 1) and _pick(extra, _START_ALIASES) is not None:
            start_line = _pick(extra, _START_ALIASES)
        if end_line in (None, "", 0) and _pick(extra, _END_ALIASES) is not None:
            end_line = _pick(extra, _END_ALIASES)
        return read(self.root, value, start_line, end_line)

    @classmethod
    def signature(cls) -> str:
        return f"{cls.name}(path: str, start_line: int = 1, end_line: int = 0)"
