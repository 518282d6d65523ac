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
from pathlib import Path
from typing import Any

from actors.runtime.registry import Registry, Tool
from actors.tools.arguments import alias_arg, whole_number
from actors.tools.paths import (
    BINARY_SUFFIXES,
    LINE_CHARS,
    READ_MAX_LINES,
    READ_WINDOW,
    ToolInputError,
    clean_path,
    is_binary,
    is_inside,
    list_folder,
    open_in_root,
    read_lines,
    rel_path,
    resolve_root,
    walk_files,
    resolve_in_root,
)
from actors.tools.search import (
    lines_with,
    search,
)

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
    base = resolve_root(root)
    text = clean_path(path)
    start = whole_number(start_line, "start_line", 1)
    end = whole_number(end_line, "end_line", 0)

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

    rel = rel_path(target, base)
    if target.is_dir():
        entries = list_folder(target, limit=60)
        shown = ", ".join(entries) if entries else "nothing"
        return f"'{rel}' is a folder, not a file. It contains: {shown}. Call read_file on one of its files."
    fd = open_in_root(base, target)
    try:
        head = os.pread(fd, 8192, 0)
        if is_binary(head) or target.suffix.lower() in BINARY_SUFFIXES:
            raise ToolInputError(
                f"'{rel}' is a binary file ({os.fstat(fd).st_size} bytes); read_file shows text files only. "
                "Use search_files to find source or text files."
            )
        start = max(1, start)
        if end <= 0 or end < start:
            end = start + window - 1
        capped = end - start + 1 > max_lines
        if capped:
            end = start + max_lines - 1
        lines = read_lines(fd, start, end)
    except OSError as e:
        raise ToolInputError(f"Cannot read '{rel}': {e.strerror or e}.") from None
    finally:
        os.close(fd)
    total = len(lines)
    if total == 0:
        return f"'{rel}' is empty (0 lines)."

    if start > total:
        if lines.cut:
            raise ToolInputError(
                f"'{rel}' is too big to read that far: only its first {total} lines (the first "
                f"{lines.cap} bytes of {lines.size}) can be read; start_line={start} is past them."
            )
        raise ToolInputError(
            f"'{rel}' has {total} lines; start_line={start} is past the end. "
            f"Read with start_line between 1 and {total}."
        )
    end = min(end, total)

    width = len(str(end))
    of = f"at least {total}" if lines.cut else f"{total}"
    header = f"{rel}, lines {start}-{end} of {of}:"
    body = [f"{n:>{width}}: {_cut(lines[n - 1], LINE_CHARS)}" for n in range(start, end + 1)]
    out = [header, *body]
    if end < total:
        note = f"(showing lines {start}-{end} of {of}; to continue read start_line={end + 1}"
        out.append(note + (f"; at most {max_lines} lines per read)" if capped else ")"))
    elif not lines.cut:
        out.append(f"(end of file: {total} lines)")
    if lines.cut:
        out.append(
            f"(the file is {lines.size} bytes; reading stopped at {lines.cap} bytes, so lines past {total} "
            "are neither shown nor counted)"
        )
    return "\n".join(out)


_SHOWN = re.compile(r"^(?P<rel>.+), lines 1-(?P<end>\d+) of (?P=end):$")


def search_within(root: str | os.PathLike[str], path: str, query: Any) -> str:
    """search_files in one file or folder under root (what "what does README.md say about
    replay?" needs: that file's lines on replay, not every file's). A path outside the root
    is refused as read_file refuses it. In a file: its lines with the query's words; a file
    short enough to show whole is shown whole (after the numbers of those lines); a file
    without them, its first lines after saying so."""
    base = resolve_root(root)
    text = clean_path(path)
    target = _locate(base, text)
    if target is None:
        resolve_in_root(base, text, listed_by="search_files")  # refuses escapes with the proper message
        raise ToolInputError(_not_found(base, text))
    if target.is_dir():
        return search(base, query, within=target)
    rel = rel_path(target, base)
    numbers = [str(n) for n in lines_with(base, target, query)]
    if not numbers:
        asked = ", ".join(repr(w) for w in str(query).split()) or repr(query)
        return f"No line of {rel} contains {asked}. Its first lines:\n" + read(base, rel)
    whole = read(base, rel)
    if _SHOWN.match(whole.splitlines()[0]):
        return f"{rel} says it on line{'s' if len(numbers) > 1 else ''} {', '.join(numbers)}; the whole file:\n{whole}"
    return search(base, query, within=target)


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
    all_files = [rel_path(p, base) for p in walk_files(base)]
    same_name = [f for f in all_files if Path(f).name == name][:5]
    close = difflib.get_close_matches(text, all_files, n=5, cutoff=0.6)
    by_name = {Path(f).name: f for f in all_files}
    close += [by_name[n] for n in difflib.get_close_matches(name, list(by_name), n=3, cutoff=0.7)]
    suggestions = list(dict.fromkeys(same_name + close))[:6]
    msg = f"No file '{text}' under the root."
    if suggestions:
        msg += " Did you mean: " + ", ".join(suggestions) + "?"
    parent = (base / text).parent
    try:  # the parent may change meanwhile (a folder swapped for a link): then list the root
        real_parent = parent.resolve() if parent != base and parent.is_dir() else base
    except (RuntimeError, OSError):
        real_parent = base
    folder = real_parent if is_inside(real_parent, base) else base
    listing = list_folder(folder, limit=15)
    if listing:
        where = "the root" if folder == base else f"'{rel_path(folder, base)}'"
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


class _RootTool(Tool):
    def __init__(self, root: str, **config: Any) -> None:
        super().__init__(root=root, **config)
        self.root = str(resolve_root(root))


@Registry.register_tool("search_files")
class SearchFiles(_RootTool):
    description = (
        "Search every file under the root for words or identifiers (case-insensitive; several "
        "words are matched separately and files ranked by how many they contain). Shows the "
        "best files with matching lines as path:LINE: text."
    )

    def execute(self, query: str = "", path: str = "", **extra: Any) -> str:
        value = alias_arg(query, extra, _QUERY_ALIASES)
        if value in (None, ""):
            raise ToolInputError("search_files needs a query, e.g. search_files(query='snapshot')")
        if path not in (None, ""):
            return search_within(self.root, str(path), value)
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
        value = alias_arg(path, extra, _PATH_ALIASES)
        if value in (None, ""):
            raise ToolInputError("read_file needs a path, e.g. read_file(path='README.md', start_line=1)")
        start_line = alias_arg(start_line, extra, _START_ALIASES, unset=(None, "", 1))
        end_line = alias_arg(end_line, extra, _END_ALIASES, unset=(None, "", 0))
        return read(self.root, value, start_line, end_line)

    @classmethod
    def signature(cls) -> str:
        return f"{cls.name}(path: str, start_line: int = 1, end_line: int = 0)"
