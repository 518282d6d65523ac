"""semantic_file_search's `ranking="hybrid-hyde"` policy (issue 15): hybrid first, seed 003's
HyDE only when the hybrid result looks weak (`FallbackRule`), then fused with the dense and
lexical rankings. A scripted model (no Ray, no Qdrant): the index's two sides are given as hit
lists, HyDE runs the real pipeline over a small corpus with a word-count embedder."""

from __future__ import annotations

import json

import pytest

from actors.codeqa.config import SEMANTIC_RANKINGS, SEMANTIC_SEARCH_CONFIG, CodeQaConfig, SemanticSearchConfig
from actors.codeqa.hyde import FALLBACK_RULE, Corpus, FallbackRule, file_order, fuse_files, hyde_reason, semantic_search
from actors.codeqa.formatting import format_fallback
from actors.codeqa.fusion import FallbackResult, fallback_rank
from actors.codeqa.tools import SemanticFileSearch
from actors.index.hybrid import RANKINGS, HybridConfig, fuse_hits
from actors.index.vectors import Hit
from actors.testing.model import ScriptedProvider
from actors.runtime.llm.types import LlmError
from actors.runtime.settings import ConfigError
from actors.runtime.tool_context import ToolContext

CODE = {
    "cipher.py": "class AesCipher:\n    def encrypt(self, data):\n        return aes(self.key, nonce, data)\n",
    "store.py": "class Store:\n    def append(self, events):\n        self.rows.extend(events)\n",
    "cart.py": "class Cart:\n    def price(self, order):\n        return sum(order)\n",
    "notes.py": "# cipher notes: see cipher.py for encrypt and decrypt\n",
}
HYDE = "class Cipher:\n    def encrypt(self, data):\n        return aes_encrypt(key, nonce, data)\n"
KEYWORDS = json.dumps({"keywords": ["cipher", "encrypt", "decrypt", "aes", "nonce", "data", "key", "block"]})


class WordEmbedder:
    VOCAB = ("cipher", "encrypt", "decrypt", "aes", "nonce", "cart", "price", "order", "store", "append")

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [[float(t.lower().count(w)) for w in self.VOCAB] for t in texts]


def hit(path: str, score: float, start: int = 1) -> Hit:
    return Hit(path, start, start + 9, f"text of {path}", "python", score)


def scripted_hyde(replies=(HYDE, KEYWORDS)):
    """A HyDE search over CODE with scripted replies; returns (callable, provider)."""
    provider = ScriptedProvider(list(replies))
    ctx = ToolContext.local(provider, WordEmbedder(), tool="semantic_file_search")
    corpus = Corpus(dict(CODE))
    cfg = SEMANTIC_SEARCH_CONFIG.model_copy(update={"top_k_results": 1})  # rank by cosine, not by counts
    return (lambda: semantic_search("How are events encrypted?", corpus, ctx, cfg)), provider


# -- the rule (pure) --------------------------------------------------------------------------------


def test_the_rule_trusts_hybrid_when_both_sides_put_the_same_file_first() -> None:
    assert hyde_reason(["a.py", "b.py"], ["a.py", "c.py"], 0.71, FallbackRule()) is None


def test_the_rule_asks_for_hyde_when_the_sides_disagree_on_the_first_file() -> None:
    reason = hyde_reason(["a.py", "b.py"], ["b.py", "a.py"], 0.71, FallbackRule())
    assert reason == "dense and lexical disagree on the first file (a.py / b.py)"
    assert hyde_reason(["a.py"], ["b.py"], 0.71, FallbackRule(on_disagreement=False)) is None


def test_the_rule_asks_for_hyde_below_the_dense_threshold_only_when_one_is_set() -> None:
    weak = FallbackRule(min_dense_score=0.5)
    assert hyde_reason(["a.py"], ["a.py"], 0.49, weak) == "the best dense match is weak (cosine 0.49 < 0.50)"
    assert hyde_reason(["a.py"], ["a.py"], 0.51, weak) is None
    assert hyde_reason(["a.py"], ["a.py"], 0.01, FallbackRule(min_dense_score=0.0)) is None
    assert hyde_reason([], ["a.py"], None, FallbackRule()) == "the dense side found nothing"


def test_hyde_breaks_the_tie_of_two_disagreeing_sides() -> None:
    dense, lexical = ["a.py", "b.py"], ["b.py", "a.py"]
    assert fuse_files(dense, lexical, [], FallbackRule())[:2] == ["a.py", "b.py"]  # a tie: dense's first
    assert fuse_files(dense, lexical, ["b.py", "c.py"], FallbackRule())[:3] == ["b.py", "a.py", "c.py"]
    assert fuse_files(dense, lexical, ["b.py"], FallbackRule(hyde_weight=0.0))[:2] == ["a.py", "b.py"]
    assert file_order(["a.py", "b.py", "a.py", "c.py"]) == ["a.py", "b.py", "c.py"]


# -- the policy over the two sides, with a scripted model -------------------------------------------


def test_strong_hybrid_result_runs_no_model_call_and_keeps_the_hybrid_order() -> None:
    dense = [hit("store.py", 0.8), hit("cart.py", 0.6), hit("cipher.py", 0.5)]
    lexical = [hit("store.py", 9.0), hit("cipher.py", 4.0)]
    run, provider = scripted_hyde()
    found = fallback_rank(dense, lexical, run, FallbackRule())
    assert found.reason is None and found.hyde is None and provider.calls == 0
    assert found.paths == file_order([h.path for h in fuse_hits(dense, lexical, HybridConfig())])
    assert found.paths[0] == "store.py"


def test_weak_hybrid_result_runs_hyde_and_its_vote_moves_the_file_it_found_first() -> None:
    dense = [hit("store.py", 0.6), hit("cipher.py", 0.55), hit("cart.py", 0.3)]
    lexical = [hit("cipher.py", 7.0), hit("store.py", 6.0)]
    run, provider = scripted_hyde()
    found = fallback_rank(dense, lexical, run, FallbackRule())
    assert found.reason is not None and found.reason.startswith("dense and lexical disagree")
    assert provider.calls == 2  # the HyDE answer and its keywords
    assert found.hyde is not None and found.hyde.paths[0] == "cipher.py"
    assert found.paths[:2] == ["cipher.py", "store.py"]  # hybrid alone puts store.py first
    assert file_order([h.path for h in fuse_hits(dense, lexical, HybridConfig())])[0] == "store.py"
    assert "HyDE ran because dense and lexical disagree" in format_fallback(found)


def test_a_low_dense_score_runs_hyde_even_when_the_sides_agree() -> None:
    dense, lexical = [hit("store.py", 0.2), hit("cipher.py", 0.19)], [hit("store.py", 3.0)]
    run, provider = scripted_hyde()
    assert fallback_rank(dense, lexical, run, FallbackRule()).reason is None and provider.calls == 0
    found = fallback_rank(dense, lexical, run, FallbackRule(min_dense_score=0.3))
    assert found.reason == "the best dense match is weak (cosine 0.20 < 0.30)" and provider.calls == 2


def test_a_failed_hyde_call_keeps_the_hybrid_order_and_says_so() -> None:
    dense, lexical = [hit("store.py", 0.6), hit("cipher.py", 0.5)], [hit("cipher.py", 7.0), hit("store.py", 6.0)]

    def down():
        raise LlmError("unreachable", "connection refused")

    found = fallback_rank(dense, lexical, down, FallbackRule())
    assert found.reason is not None and found.hyde is None and "connection refused" in found.error
    assert found.paths == file_order([h.path for h in fuse_hits(dense, lexical, HybridConfig())])
    assert "its model call failed" in format_fallback(found)
    assert format_fallback(FallbackResult([], None)).startswith("No indexed file matches")


# -- the tool's option --------------------------------------------------------------------------------


def test_the_tool_validates_its_ranking_option(tmp_path) -> None:
    for ranking in SEMANTIC_RANKINGS:
        assert SemanticFileSearch(root=str(tmp_path), ranking=ranking).ranking == ranking
    assert {"hyde", "hybrid-hyde", "hybrid", "dense", "lexical"} == set(SEMANTIC_RANKINGS) == {"hyde", "hybrid-hyde", *RANKINGS}
    with pytest.raises(ValueError, match="ranking must be one of hybrid, hyde, hybrid-hyde, dense, lexical, not 'hyde-hybrid'"):
        SemanticFileSearch(root=str(tmp_path), ranking="hyde-hybrid")
    assert SemanticFileSearch(root=str(tmp_path), ranking="hybrid-hyde").fallback == FALLBACK_RULE


def test_hybrid_is_the_default_ranking_and_the_configuration_chooses_another(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("CHORUS_CODEQA_CONFIG", raising=False)
    assert SemanticSearchConfig().ranking == "hybrid" == SEMANTIC_RANKINGS[0]
    assert SemanticFileSearch(root=str(tmp_path)).ranking == "hybrid"
    monkeypatch.setenv("CHORUS_CODEQA_CONFIG", '{"semantic_search": {"ranking": "hyde"}}')
    assert SemanticFileSearch(root=str(tmp_path)).ranking == "hyde"  # read when the tool is made
    assert SemanticFileSearch(root=str(tmp_path), ranking="dense").ranking == "dense"  # the argument wins
    chosen = SemanticFileSearch(root=str(tmp_path), codeqa={"semantic_search": {"ranking": "hybrid-hyde"}})
    assert chosen.ranking == "hybrid-hyde"
    with pytest.raises(ConfigError, match="semantic_search.ranking: Value error, must be one of hybrid, hyde, hybrid-hyde, dense, lexical, not 'bm25'"):
        CodeQaConfig.load({"semantic_search": {"ranking": "bm25"}}, env={})
