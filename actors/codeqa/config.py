"""Seed 003's numbers in one configuration object, overridable.

`SEMANTIC_SEARCH_CONFIG` and `CODE_READING_CONFIG` keep the seed's names and values; they are
the two halves of `CodeQaConfig`, next to the few limits the seed states in prose (search
returns the top 50 files, the orchestrator stops after 10 iterations), and the ranking
`semantic_file_search` uses (`semantic_search.ranking`: "hybrid" by default, see below).
Override any of it:

- from Python: `CodeQaConfig.load({"semantic_search": {"top_k_results": 3}})`, or pass a
  `CodeQaConfig` to a tool (`codeqa=...`) or to `hyde_ranker(..., config=...)`;
- from the environment: `CHORUS_CODEQA_CONFIG='{"code_reading": {"max_lines": 120}}'` (JSON),
  read when a tool is created, so set it before the run starts (on every node of a cluster).

An unknown key or a wrong type is a `ConfigError` with one line saying which.

`semantic_search.ranking` is how `semantic_file_search` ranks files. "hybrid" (the default):
the repository index's BM25 and embedding rankings fused, no model call; the first search of
a repository embeds all of it (later ones only changed files). "hyde": seed 003's pipeline,
a hypothetical answer and its keywords from the model (two calls per search), then
embeddings of the keyword candidates. "hybrid-hyde": hybrid, and HyDE too when hybrid's two
sides disagree. "dense", "lexical": one side of the index alone. Hybrid is the default
because it ranked better than HyDE on every set measured, at a fraction of the cost
(BENCHMARKS.md, "HyDE against hybrid, and the fallback"). Choose HyDE with
`CHORUS_CODEQA_CONFIG='{"semantic_search": {"ranking": "hyde"}}'`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from actors.runtime.settings import ConfigError

ENV_VAR = "CHORUS_CODEQA_CONFIG"
# semantic_file_search's rankings: the default first, then seed 003's HyDE, the fallback, and
# the repository index's other two (`actors.index.hybrid.RANKINGS` holds dense, lexical, hybrid)
SEMANTIC_RANKINGS = ("hybrid", "hyde", "hybrid-hyde", "dense", "lexical")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SemanticSearchConfig(_Frozen):
    ranking: str = "hybrid"  # semantic_file_search's ranking, one of SEMANTIC_RANKINGS
    chunk_size: int = 500  # tokens (all-MiniLM-L6-v2's WordPiece tokenizer)
    chunk_overlap: int = 100
    max_files_to_search: int = 50  # keyword candidates that get chunked and embedded
    top_k_results: int = 5  # this many candidates or fewer: return them, no embedding
    max_results_with_lines: int = 10  # files returned, each with its best line range
    num_keywords: int = 8
    max_keyword_retries: int = 3  # further attempts after a reply with too few good keywords
    keyword_min_chars: int = 3
    keyword_max_chars: int = 8
    hyde_words: int = 500  # the most the HyDE prompt asks for
    # A cap on the HyDE completion: the embedder (MiniLM) reads only its first 256 tokens, and
    # the small local model writes 1-5 tokens/s on 2 shared cores.
    hyde_max_tokens: int = 256

    @field_validator("ranking")
    @classmethod
    def _known_ranking(cls, value: str) -> str:
        if value not in SEMANTIC_RANKINGS:
            raise ValueError(f"must be one of {', '.join(SEMANTIC_RANKINGS)}, not {value!r}")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> SemanticSearchConfig:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(f"chunk_overlap ({self.chunk_overlap}) must be smaller than chunk_size ({self.chunk_size})")
        if not 1 <= self.keyword_min_chars <= self.keyword_max_chars:
            raise ValueError("keyword_min_chars must be at least 1 and at most keyword_max_chars")
        for name in ("max_files_to_search", "max_results_with_lines", "num_keywords", "hyde_max_tokens"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        if self.max_keyword_retries < 0 or self.top_k_results < 0:
            raise ValueError("max_keyword_retries and top_k_results cannot be negative")
        return self


class CodeReadingConfig(_Frozen):
    max_lines: int = 200  # one read_code call shows at most this many lines, and says so

    @model_validator(mode="after")
    def _positive(self) -> CodeReadingConfig:
        if self.max_lines < 1:
            raise ValueError("max_lines must be at least 1")
        return self


class KeywordSearchConfig(_Frozen):
    max_files: int = 50  # search_keyword lists the top 50 files by occurrences


class DocumentationConfig(_Frozen):
    max_doc_lines: int = 150  # of llms.txt / README.md, so one observation stays readable
    max_tree_entries: int = 300


class CodeQaConfig(_Frozen):
    semantic_search: SemanticSearchConfig = SemanticSearchConfig()
    code_reading: CodeReadingConfig = CodeReadingConfig()
    keyword_search: KeywordSearchConfig = KeywordSearchConfig()
    documentation: DocumentationConfig = DocumentationConfig()
    max_iterations: int = 10  # the orchestrator's ReAct iterations

    @classmethod
    def load(cls, overrides: Mapping[str, Any] | None = None, *, env: Mapping[str, str] | None = None) -> CodeQaConfig:
        """The defaults, then `CHORUS_CODEQA_CONFIG` (JSON), then `overrides`, merged key by key."""
        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        raw = env.get(ENV_VAR, "").strip()
        if raw:
            try:
                from_env = json.loads(raw)
            except json.JSONDecodeError as e:
                raise ConfigError(f"{ENV_VAR} is not JSON: {e}") from None
            if not isinstance(from_env, dict):
                raise ConfigError(f"{ENV_VAR} must be a JSON object, e.g. '{{\"code_reading\": {{\"max_lines\": 120}}}}'")
            values = _merge(values, from_env)
        values = _merge(values, dict(overrides or {}))
        try:
            return cls.model_validate(values)
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "config"
            raise ConfigError(f"invalid code-question configuration: {where}: {first['msg']}") from None

    @classmethod
    def coerce(cls, value: CodeQaConfig | Mapping[str, Any] | None) -> CodeQaConfig:
        """What tools accept: a config, a mapping of overrides, or None (defaults + env)."""
        if isinstance(value, CodeQaConfig):
            return value
        return cls.load(value)


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = dict(value) if isinstance(value, Mapping) else value
    return out


DEFAULT_CONFIG = CodeQaConfig()
SEMANTIC_SEARCH_CONFIG = DEFAULT_CONFIG.semantic_search
CODE_READING_CONFIG = DEFAULT_CONFIG.code_reading
