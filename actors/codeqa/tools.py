"""Seed 003's five tools for the orchestrator, confined to a folder of repositories.

    list_available_repositories()                  the repositories (folders) in the folder
    get_repo_documentation(repo)                   llms.txt, else README.md, always with the tree
    search_keyword(keyword, repo="")               files by occurrences, case-insensitive, top 50
    read_code(path, start_line=1, end_line=0)      numbered lines, at most 200 per call
    semantic_file_search(query, repo="")           top 10 files with line ranges, by the
                                                   repository index's hybrid search (BM25 +
                                                   vectors fused, no LLM; the default), or by
                                                   seed 003's HyDE + embeddings (ranking="hyde"),
                                                   or ranking="hybrid-hyde": hybrid, and HyDE only
                                                   when hybrid looks weak, `hyde.FallbackRule`

Paths are relative to the repositories folder and start with the repository's name
(`shop/src/billing.py`). A call the model got wrong (a path outside the folder, an unknown
repository, a binary file, a line range past the end) raises `ToolInputError`, whose one
line is the observation the model reads; the run goes on. Every limit comes from
`CodeQaConfig` (seed 003's `SEMANTIC_SEARCH_CONFIG`, `CODE_READING_CONFIG`), and so does
semantic_file_search's ranking (`semantic_search.ranking`, "hybrid" unless configured).

The hybrid ranking searches the repository index, which the first search of a repository
builds: every text file chunked and embedded (MiniLM on the CPU; tens of seconds for a
50-file package), logged as it goes on the `chorus.codeqa` logger and noted in that search's
output. Later searches re-embed only changed files.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from actors.codeqa.config import SEMANTIC_RANKINGS, CodeQaConfig, SemanticSearchConfig
from actors.codeqa.hyde import (
    FALLBACK_RULE,
    Corpus,
    FallbackRule,
    SemanticResult,
    file_order,
    fuse_files,
    hyde_reason,
    semantic_search,
)
from actors.codeqa.occurrences import FileCount, keyword_terms, load_texts, rank_texts, relative_files
from actors.codeqa.repos import directory_tree, find_documentation, list_repositories, repository, resolve_file
from actors.index.hybrid import HybridConfig, fuse_hits, search_index
from actors.index.indexer import INDEX_HEADERS, IndexReport, index_repository
from actors.index.vectors import Hit, collection_for, open_index
from actors.runtime.llm.types import LlmError
from actors.runtime.registry import Registry, Tool
from actors.tools.arguments import alias_arg, whole_number
from actors.tools.paths import (
    BINARY_SUFFIXES,
    LINE_CHARS,
    MAX_FILE_BYTES,
    LineWindow,
    ToolInputError,
    is_binary,
    open_in_root,
    read_head,
    read_lines,
    rel_path,
    resolve_root,
)


log = logging.getLogger("chorus.codeqa")
LINES_SHOWN = 15  # search_keyword shows the line itself for its best 15 files, the number for the rest


class _ReposTool(Tool):
    """Holds the repositories folder and the configuration; checks the folder on every call,
    so a folder removed mid-run is an observation, not a crashed actor."""

    def __init__(self, root: str, codeqa: CodeQaConfig | dict[str, Any] | None = None, **config: Any) -> None:
        super().__init__(root=root, **config)
        self.root = str(Path(root).expanduser().resolve())
        self.settings = CodeQaConfig.coerce(codeqa)

    def base(self) -> Path:
        try:
            return resolve_root(self.root)
        except NotADirectoryError:
            raise ToolInputError(f"The repositories folder {self.root} does not exist.") from None


_REPO = ("repo", "repo_name", "repository", "repository_name", "name")
_KEYWORD = ("keyword", "keywords", "query", "q", "term", "terms", "pattern", "text", "word", "search")
_PATH = ("path", "file_path", "file", "filepath", "filename", "file_name")
_QUERY = ("query", "question", "q", "text", "keywords", "keyword")


@Registry.register_tool("list_available_repositories")
class ListAvailableRepositories(_ReposTool):
    description = "List the repositories (folders) in the repositories folder."

    def execute(self, **_ignored: Any) -> str:
        return format_repositories(list_repositories(self.base()))


@Registry.register_tool("get_repo_documentation")
class GetRepoDocumentation(_ReposTool):
    description = "A repository's documentation (llms.txt, else README.md) and its directory tree."

    @classmethod
    def signature(cls) -> str:
        return f"{cls.name}(repo: str)"

    def execute(self, repo: str = "", **extra: Any) -> str:
        base = self.base()
        name, folder = repository(base, str(alias_arg(repo, extra, _REPO) or ""))
        doc = find_documentation(folder)
        text = None
        if doc is not None:
            data = read_head(base, doc, MAX_FILE_BYTES)  # regular files only, never outside
            text = None if is_binary(data) else data.decode("utf-8", errors="replace")
        limits = self.settings.documentation
        tree, left_out = directory_tree(folder, limits.max_tree_entries)
        rel = rel_path(doc, base) if doc is not None else ""
        return format_documentation(name, rel, text, tree, left_out, limits.max_doc_lines)


@Registry.register_tool("search_keyword")
class SearchKeyword(_ReposTool):
    description = (
        "Files containing a keyword (case-insensitive; several words are counted together), "
        "most occurrences first, top 50, each with the first line where it occurs."
    )

    @classmethod
    def signature(cls) -> str:
        return f'{cls.name}(keyword: str, repo: str = "")'

    def execute(self, keyword: str = "", repo: str = "", **extra: Any) -> str:
        base = self.base()
        value = alias_arg(keyword, extra, _KEYWORD)
        if isinstance(value, (list, tuple)):
            value = " ".join(map(str, value))
        terms = keyword_terms(str(value or ""))
        if not terms:
            raise ToolInputError("search_keyword needs a keyword, e.g. search_keyword(keyword='auth')")
        prefix = ""
        if alias_arg(repo, extra, _REPO):
            prefix, _ = repository(base, str(alias_arg(repo, extra, _REPO)))
        texts = relative_files(load_texts(base, base / prefix if prefix else None), prefix)
        found = rank_texts(texts, terms)
        return format_keyword_hits(terms, found, self.settings.keyword_search.max_files)


@Registry.register_tool("read_code")
class ReadCode(_ReposTool):
    description = "A file's lines with line numbers, from start_line to end_line (0: to the end); at most 200 lines per call."

    def execute(self, path: str = "", start_line: int = 1, end_line: int = 0, **extra: Any) -> str:
        base = self.base()
        target, pointed = resolve_file(base, str(alias_arg(path, extra, _PATH) or ""))
        start = _line_number(alias_arg(start_line if start_line != 1 else None, extra, ("start", "line", "from_line")), "start_line", 1)
        end = _line_number(alias_arg(end_line or None, extra, ("end", "to_line", "stop")), "end_line", 0)
        if pointed and start == 1 and end == 0:  # 'a.py:40': read around line 40
            start = max(1, pointed - 5)
        rel = rel_path(target, base)
        max_lines = self.settings.code_reading.max_lines
        fd = open_in_root(base, target)  # regular files only, never outside the folder
        try:
            if is_binary(os.pread(fd, 8192, 0)) or target.suffix.lower() in BINARY_SUFFIXES:
                size = os.fstat(fd).st_size
                raise ToolInputError(f"'{rel}' is a binary file ({size} bytes); read_code shows text files only.")
            # stream: keep only the lines that can be shown, count the rest up to the byte cap
            last = start + max_lines - 1 if end == 0 else max(start, min(end, start + max_lines - 1))
            lines = read_lines(fd, start, last)
        except OSError as e:
            raise ToolInputError(f"Cannot read '{rel}': {e.strerror or e}.") from None
        finally:
            os.close(fd)
        return format_lines(rel, lines, start, end, max_lines)

    @classmethod
    def signature(cls) -> str:
        return f"{cls.name}(path: str, start_line: int = 1, end_line: int = 0)"


@Registry.register_tool("semantic_file_search")
class SemanticFileSearch(_ReposTool):
    description = (
        "For a question in words: the files most related to it, with line ranges, found by "
        "meaning (embeddings) and by words (keyword ranking). Slower than search_keyword."
    )
    uses_context = True

    def __init__(
        self,
        root: str,
        context: Any = None,
        ranking: str | None = None,
        fallback: FallbackRule = FALLBACK_RULE,
        **config: Any,
    ) -> None:
        super().__init__(root=root, **config)
        # None: the configured one (`semantic_search.ranking`, "hybrid" unless CHORUS_CODEQA_CONFIG
        # says otherwise); "hyde" (seed 003), "hybrid-hyde" (hybrid, HyDE when it looks weak) or a
        # ranking of the index
        ranking = self.settings.semantic_search.ranking if ranking is None else ranking
        if ranking not in SEMANTIC_RANKINGS:
            raise ValueError(f"semantic_file_search ranking must be one of {', '.join(SEMANTIC_RANKINGS)}, not {ranking!r}")
        self.context = context
        self.ranking = ranking
        self.fallback = fallback
        self._vectors: dict[str, list[float]] = {}  # chunk text -> vector, for this tool's life

    @classmethod
    def signature(cls) -> str:
        return f'{cls.name}(query: str, repo: str = "")'

    def execute(self, query: str = "", repo: str = "", **extra: Any) -> str:
        base = self.base()
        question = str(alias_arg(query, extra, _QUERY) or "").strip()
        if not question:
            raise ToolInputError("semantic_file_search needs a query, e.g. semantic_file_search(query='how are users authenticated')")
        if self.context is None:
            raise RuntimeError("semantic_file_search was created without a ToolContext (uses_context)")
        prefix = ""
        if alias_arg(repo, extra, _REPO):
            prefix, _ = repository(base, str(alias_arg(repo, extra, _REPO)))
        top = self.settings.semantic_search.max_results_with_lines
        if self.ranking == "hybrid-hyde":
            corpus = Corpus(load_texts(base, base / prefix if prefix else None), _vectors=self._vectors)
            found = hybrid_hyde_search(base, prefix, question, self.context, corpus, self.settings.semantic_search,
                                       self.fallback, top)
            return format_fallback(found)
        if self.ranking != "hyde":
            reports: list[IndexReport] = []
            hits = index_search(base, prefix, question, self.context, self.ranking, top, on_report=reports.append)
            return format_index_hits(self.ranking, hits) + "".join(f"\n{indexed_note(r)}" for r in reports if r.files_embedded)
        corpus = Corpus(load_texts(base, base / prefix if prefix else None), _vectors=self._vectors)
        result = semantic_search(question, corpus, self.context, self.settings.semantic_search, under=prefix)
        return format_semantic(result)


@dataclass
class FallbackResult:
    """`hybrid_hyde_search`'s answer: the best chunk of each file, best file first."""

    hits: list[Hit]
    reason: str | None  # why HyDE ran; None: hybrid was trusted and HyDE did not run
    hyde: SemanticResult | None = None
    error: str = ""  # HyDE was due but its model call failed: hybrid's order is kept

    @property
    def paths(self) -> list[str]:
        return [h.path for h in self.hits]


def hybrid_hyde_search(
    base: Path,
    prefix: str,
    question: str,
    context: Any,
    corpus: Corpus,
    config: SemanticSearchConfig,
    rule: FallbackRule = FALLBACK_RULE,
    top: int = 10,
    depth: int = 50,
    refresh: bool = True,
) -> FallbackResult:
    """Hybrid search of the repository index of `base/prefix` (refreshed first); when
    `hyde_reason` finds it weak, seed 003's HyDE search too, its files fused with the dense
    and lexical ones. Without a reason, the order is exactly `ranking="hybrid"`'s. Paths are
    relative to `base`. `refresh=False`: the index is known to be current."""
    folder = base / prefix if prefix else base
    data_dir = Path(getattr(context.settings, "data_dir", None) or Path.home() / ".chorus")
    lead = f"{prefix}/" if prefix else ""
    with open_index(context.settings) as index:
        if refresh:  # only changed files are embedded again
            index_repository(str(folder), index=index, embed=context.embed, dim=context.embedder.dim,
                             data_dir=data_dir, headers=INDEX_HEADERS, progress=_progress(folder))
        collection = collection_for(str(folder.resolve()), headers=INDEX_HEADERS)
        dense = search_index(index, collection, question, embed=context.embed, ranking="dense", limit=depth)
        lexical = search_index(index, collection, question, ranking="lexical", limit=depth)
    dense, lexical = ([_under(h, lead) for h in side] for side in (dense, lexical))
    return fallback_rank(
        dense, lexical, lambda: semantic_search(question, corpus, context, config, under=prefix), rule, top, depth
    )


def fallback_rank(
    dense: Sequence[Hit],
    lexical: Sequence[Hit],
    hyde: Any,
    rule: FallbackRule = FALLBACK_RULE,
    top: int = 10,
    depth: int = 50,
) -> FallbackResult:
    """The fallback policy over the two sides' chunk rankings: `hyde()` (a `SemanticResult`)
    is called only when `hyde_reason` finds the hybrid result weak. Without a reason (or when
    HyDE's model call fails) the files come in hybrid's fused order; with one, the dense,
    lexical and HyDE file rankings are fused (`fuse_files`)."""
    fused = fuse_hits(dense, lexical, HybridConfig(candidates=depth))  # what ranking="hybrid" returns
    best: dict[str, Hit] = {}
    for h in [*fused, *dense, *lexical]:
        best.setdefault(h.path, h)
    dense_files, lexical_files = file_order([h.path for h in dense]), file_order([h.path for h in lexical])
    reason = hyde_reason(dense_files, lexical_files, dense[0].score if dense else None, rule)
    order = file_order([h.path for h in fused])
    out = FallbackResult([], reason)
    if reason is not None:
        try:
            out.hyde = hyde()
        except LlmError as e:
            out.error = str(e) or type(e).__name__
        else:
            order = fuse_files(dense_files, lexical_files, out.hyde.paths, rule)
            for r in out.hyde.ranked or []:
                best.setdefault(r.path, Hit(r.path, r.start_line, r.end_line, "", "", r.score))
            for c in out.hyde.candidates:
                best.setdefault(c.path, Hit(c.path, c.line, c.line, c.text, "", 0.0))
    out.hits = [best[p] for p in order[:top] if p in best]
    return out


def _progress(folder: Path) -> Callable[[str], None]:
    def say(line: str) -> None:
        log.info("semantic_file_search: indexing %s: %s", folder, line)

    return say


def indexed_note(report: IndexReport) -> str:
    """The line a search adds when it had to embed files first (a repository's first search)."""
    return (
        f"(The repository index was refreshed first: {report.files_embedded} of {report.files} files "
        f"embedded, {report.chunks_embedded} chunks, in {report.seconds:.0f} s.)"
    )


def _under(h: Hit, lead: str) -> Hit:
    return Hit(lead + h.path, h.start_line, h.end_line, h.text, h.language, h.score) if lead else h


def index_search(
    base: Path,
    prefix: str,
    question: str,
    context: Any,
    ranking: str,
    top: int,
    on_report: Callable[[IndexReport], None] | None = None,
) -> list[Hit]:
    """The best chunk of each of the `top` best files for `question`, from the repository
    index of `base/prefix` (refreshed first: only changed files are embedded again, all of
    them the first time, with progress on the `chorus.codeqa` logger); paths relative to
    `base`. `on_report` gets the refresh's `IndexReport`."""
    folder = base / prefix if prefix else base
    embedder = context.embedder
    settings = context.settings
    data_dir = Path(getattr(settings, "data_dir", None) or Path.home() / ".chorus")
    with open_index(settings) as index:
        report = index_repository(str(folder), index=index, embed=context.embed, dim=embedder.dim, data_dir=data_dir,
                                  headers=INDEX_HEADERS, progress=_progress(folder))
        if on_report is not None:
            on_report(report)
        hits = search_index(index, collection_for(str(folder.resolve()), headers=INDEX_HEADERS), question,
                            embed=context.embed, ranking=ranking, limit=max(50, top * 5))
    best: dict[str, Hit] = {}
    for h in hits:
        best.setdefault(h.path, h)
    lead = f"{prefix}/" if prefix else ""
    return [Hit(lead + h.path, h.start_line, h.end_line, h.text, h.language, h.score) for h in list(best.values())[:top]]


# -- what the tools print (pure) ----------------------------------------------------------------


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


def _line_number(value: Any, name: str, default: int) -> int:
    return max(whole_number(value, name, default), 0 if name == "end_line" else 1)


def _trim(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _cut(line: str) -> str:
    line = line.rstrip()
    return line if len(line) <= LINE_CHARS else line[:LINE_CHARS] + f" …[+{len(line) - LINE_CHARS} chars]"
