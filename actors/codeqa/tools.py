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

The search behind semantic_file_search is `actors.codeqa.fusion` (the index's rankings and
the HyDE fallback fused); what every tool prints is `actors.codeqa.formatting`. The tool
classes stay here, at the import paths recorded runs name (`actors.codeqa.tools:ReadCode`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from actors.codeqa.config import SEMANTIC_RANKINGS, CodeQaConfig
from actors.codeqa.formatting import (
    format_documentation,
    format_fallback,
    format_index_hits,
    format_keyword_hits,
    format_lines,
    format_repositories,
    format_semantic,
    indexed_note,
)
from actors.codeqa.fusion import hybrid_hyde_search, index_search
from actors.codeqa.hyde import FALLBACK_RULE, Corpus, FallbackRule, semantic_search
from actors.codeqa.occurrences import keyword_terms, load_texts, rank_texts, relative_files
from actors.codeqa.repos import directory_tree, find_documentation, list_repositories, repository, resolve_file
from actors.index.indexer import IndexReport
from actors.runtime.registry import Registry, Tool
from actors.tools.arguments import alias_arg, whole_number
from actors.tools.paths import (
    BINARY_SUFFIXES,
    MAX_FILE_BYTES,
    ToolInputError,
    is_binary,
    open_in_root,
    read_head,
    read_lines,
    rel_path,
    resolve_root,
)


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


def _line_number(value: Any, name: str, default: int) -> int:
    return max(whole_number(value, name, default), 0 if name == "end_line" else 1)
