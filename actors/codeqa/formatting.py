"""What the code-question tools print (actors.codeqa.tools): the observation the model
reads, as pure functions of what a tool found. A call the model got wrong (a line range
past the end of a file) raises `ToolInputError`, whose one line is the observation.
"""

from __future__ import annotations

from collections.abc import Sequence

from actors.codeqa.fusion import FallbackResult
from actors.codeqa.hyde import SemanticResult
from actors.codeqa.occurrences import FileCount
from actors.index.indexer import IndexReport
from actors.index.vectors import Hit
from actors.tools.paths import LINE_CHARS, LineWindow, ToolInputError

LINES_SHOWN = 15  # search_keyword shows the line itself for its best 15 files, the number for the rest


def indexed_note(report: IndexReport) -> str:
    """The line a search adds when it had to embed files first (a repository's first search)."""
    return (
        f"(The repository index was refreshed first: {report.files_embedded} of {report.files} files "
        f"embedded, {report.chunks_embedded} chunks, in {report.seconds:.0f} s.)"
    )


def format_repositories(names: list[str]) -> str:
    if not names:
        return (
            "No repositories: the repositories folder holds no sub-folders "
            "(each repository is a folder inside it)."
        )
    head = f"{len(names)} repositor{'y' if len(names) == 1 else 'ies'}: " + ", ".join(names)
    return head + "\nNext: get_repo_documentation(repo) for one of them, or search_keyword(keyword) to find code."


def format_documentation(
    name: str, doc_path: str, text: str | None, tree: list[str], left_out: int, max_lines: int
) -> str:
    out = []
    if doc_path and text is not None:
        lines = text.rstrip().splitlines()
        out.append(f"Documentation of {name} ({doc_path}):")
        out.extend(lines[:max_lines])
        if len(lines) > max_lines:
            out.append(
                f"[documentation cut at {max_lines} of {len(lines)} lines; "
                f"read_code(path='{doc_path}', start_line={max_lines + 1}) for the rest]"
            )
        out.append("")
        out.append(f"Directory tree of {name}:")
    else:
        why = "binary" if doc_path else "missing"
        out.append(f"{name} has no llms.txt or README.md ({why}); its directory tree only:")
    out.extend(tree)
    if left_out:
        out.append(f"[{left_out} more entries not shown]")
    return "\n".join(out)


def format_keyword_hits(terms: list[str], found: list[FileCount], limit: int) -> str:
    shown = ", ".join(f"'{t}'" for t in terms)
    if not found:
        return (
            f"No file contains {shown} (case-insensitive). Try a shorter word or part of an "
            "identifier, or semantic_file_search(query) with the question in words."
        )
    top = found[:limit]
    noun = "file contains" if len(found) == 1 else "files contain"
    head = f"{len(found)} {noun} {shown} (case-insensitive), most occurrences first"
    out = [head + (f"; the top {len(top)}:" if len(found) > len(top) else ":")]
    for i, hit in enumerate(top):
        detail = f"line {hit.line}: {_trim(hit.text)}" if i < LINES_SHOWN else f"line {hit.line}"
        if len(terms) > 1:
            detail = ", ".join(f"{t} {n}" for t, n in hit.counts if n) + "; " + detail
        out.append(f"{hit.path}: {hit.total} ({detail})")
    out.append("Next: read_code(path, start_line) around a line shown, or answer if a line shows the answer.")
    return "\n".join(out)


def format_lines(rel: str, lines: Sequence[str], start: int, end: int, max_lines: int) -> str:
    """Lines `start..end` (end 0: to the end) numbered, at most `max_lines`, with a note when
    cut. A start past the end, or an end before the start, is the model's mistake."""
    total = len(lines)
    cut = isinstance(lines, LineWindow) and lines.cut  # the byte cap stopped the read early
    if total == 0:
        return f"'{rel}' is empty (0 lines)."
    if start > total:
        if cut:
            assert isinstance(lines, LineWindow)
            raise ToolInputError(
                f"'{rel}' is too big to read that far: only its first {total} lines (the first "
                f"{lines.cap} bytes of {lines.size}) can be read; start_line={start} is past them."
            )
        raise ToolInputError(
            f"'{rel}' has {total} lines; start_line={start} is past the end. Use start_line between 1 and {total}."
        )
    if end and end < start:
        raise ToolInputError(f"end_line={end} is before start_line={start}; give end_line >= start_line, or 0 for the end.")
    last = total if end == 0 else min(end, total)
    truncated = last - start + 1 > max_lines
    if truncated:
        last = start + max_lines - 1
    width = len(str(last))
    of = f"at least {total}" if cut else f"{total}"
    out = [f"{rel}, lines {start}-{last} of {of}:"]
    out += [f"{n:>{width}}: {_cut(lines[n - 1])}" for n in range(start, last + 1)]
    if truncated:
        out.append(
            f"(truncated at {max_lines} lines: showing lines {start}-{last} of {of}; "
            f"to continue call read_code with start_line={last + 1})"
        )
    elif last < total:
        out.append(f"(showing lines {start}-{last} of {of}; to continue read start_line={last + 1})")
    elif not cut:
        out.append(f"(end of file: {total} lines)")
    if cut:
        assert isinstance(lines, LineWindow)
        out.append(
            f"(the file is {lines.size} bytes; reading stopped at {lines.cap} bytes, so lines past {total} "
            "are neither shown nor counted)"
        )
    return "\n".join(out)


def format_semantic(result: SemanticResult) -> str:
    out = [f"Keywords from a hypothetical answer: {', '.join(result.keywords) or '(none)'}"]
    if not result.candidates:
        out.append("No file contains any of them. Try search_keyword with a word from the question.")
        return "\n".join(out)
    if result.ranked is None:
        n = len(result.candidates)
        out.append(f"{n} file{' contains' if n == 1 else 's contain'} them (most occurrences first):")
        for i, c in enumerate(result.candidates, 1):
            out.append(f"{i}. {c.path} ({c.total} occurrences; line {c.line}: {_trim(c.text)})")
    else:
        out.append(
            f"{result.matched_files} files contain them; the top {len(result.candidates)} by occurrences, "
            f"cut into {result.chunks} chunks, ranked by similarity to the hypothetical answer:"
        )
        for i, r in enumerate(result.ranked, 1):
            out.append(f"{i}. {r.path} lines {r.start_line}-{r.end_line} (similarity {r.score:.2f})")
    out.append("Next: read_code(path, start_line, end_line) on one of these.")
    return "\n".join(out)


def format_fallback(found: FallbackResult) -> str:
    if found.reason is None:
        return format_index_hits("hybrid", found.hits)
    if found.error:
        note = f"(HyDE was due, since {found.reason}, but its model call failed: {found.error})"
        return format_index_hits("hybrid", found.hits) + "\n" + note
    if not found.hits:
        return "No file matches the question. Try search_keyword with a word from the question."
    keywords = ", ".join(found.hyde.keywords) if found.hyde else ""
    out = [
        f"The files most related to the question, by embedding and keyword (BM25) search and a hypothetical "
        f"answer (HyDE, keywords: {keywords or '(none)'}), fused; HyDE ran because {found.reason}:"
    ]
    out += [f"{i}. {h.path} lines {h.start_line}-{h.end_line}" for i, h in enumerate(found.hits, 1)]
    out.append("Next: read_code(path, start_line, end_line) on one of these.")
    return "\n".join(out)


def format_index_hits(ranking: str, hits: Sequence[Hit]) -> str:
    how = {"hybrid": "keyword (BM25) and embedding search, fused", "dense": "embedding search",
           "lexical": "keyword (BM25) search"}[ranking]
    if not hits:
        return "No indexed file matches the question. Try search_keyword with a word from the question."
    out = [f"The files most related to the question, by {how} (best chunk of each):"]
    out += [f"{i}. {h.path} lines {h.start_line}-{h.end_line} (score {h.score:.3f})" for i, h in enumerate(hits, 1)]
    out.append("Next: read_code(path, start_line, end_line) on one of these.")
    return "\n".join(out)


def _trim(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _cut(line: str) -> str:
    line = line.rstrip()
    return line if len(line) <= LINE_CHARS else line[:LINE_CHARS] + f" …[+{len(line) - LINE_CHARS} chars]"
