"""Rankers for the retrieval evaluation (`python -m evals retrieval`): each turns a question into
file paths, best first, relative to one repository folder, exactly as the tools rank them.

    rank = keyword_ranker(repo_dir)            # search_keyword's counting over the question's terms
    rank = hyde_ranker(repo_dir, context)      # semantic_file_search's pipeline
    rank("Which module encrypts stored events with AES?")  -> ["cipher.py", ...]

Files are read once per ranker; `hyde_ranker` also keeps chunk vectors between questions
(the same chunks embed to the same vectors), so an evaluation embeds each chunk once.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from actors.codeqa.config import CodeQaConfig
from actors.codeqa.hyde import Corpus, semantic_search
from actors.codeqa.occurrences import load_texts, rank_texts
from actors.tools.search import query_terms


def question_terms(question: str) -> list[str]:
    """The question's search terms (`search_files`' terms: words, joined words, identifier
    pieces), as search_keyword would be given them."""
    return [t.text for t in query_terms(question)]


def keyword_ranker(repo_dir: str | os.PathLike[str], config: CodeQaConfig | Mapping[str, Any] | None = None) -> Callable[[str], list[str]]:
    cfg = CodeQaConfig.coerce(config)
    texts = load_texts(repo_dir)

    def rank(question: str) -> list[str]:
        terms = question_terms(question)
        if not terms:
            return []
        return [f.path for f in rank_texts(texts, terms, cfg.keyword_search.max_files)]

    return rank


def hyde_ranker(
    repo_dir: str | os.PathLike[str], context: Any, config: CodeQaConfig | Mapping[str, Any] | None = None
) -> Callable[[str], list[str]]:
    """`context` is a `ToolContext` (any LLM provider and embedder; its calls are recorded in
    its store)."""
    cfg = CodeQaConfig.coerce(config)
    corpus = Corpus(load_texts(repo_dir))

    def rank(question: str) -> list[str]:
        return semantic_search(question, corpus, context, cfg.semantic_search).paths

    return rank
