"""semantic_file_search's HyDE pipeline with a scripted model and a word-count embedder:
keywords extracted and retried as seed 003 specifies, few files returned as they are, many
files chunked, embedded and ranked; and the configuration object."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from actors.codeqa.config import CODE_READING_CONFIG, SEMANTIC_SEARCH_CONFIG, CodeQaConfig, SemanticSearchConfig
from actors.codeqa.hyde import (
    Corpus,
    RankedFile,
    check_keywords,
    fallback_keywords,
    keyword_request,
    keyword_schema,
    rank_files,
    semantic_search,
)
from actors.codeqa.occurrences import load_texts
from actors.codeqa.retrieval import hyde_ranker, keyword_ranker
from actors.codeqa.tools import SemanticFileSearch
from actors.index.chunking import Chunk
from actors.testing.model import ScriptedProvider
from actors.runtime.settings import ConfigError
from actors.runtime.tool_context import ToolContext
from actors.tools.paths import ToolInputError

CFG = SEMANTIC_SEARCH_CONFIG
GOOD = ["cipher", "encrypt", "decrypt", "aes", "nonce", "key", "block", "data"]
HYDE = "class AesCipher:\n    def encrypt(self, data):\n        return aes_encrypt(self.key, nonce, data)\n"


class WordEmbedder:
    """Vectors that count a few words: cosine similarity then means 'talks about the same'."""

    VOCAB = ("cipher", "encrypt", "decrypt", "aes", "nonce", "cart", "price", "order")

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return [[float(t.lower().count(w)) for w in self.VOCAB] for t in texts]


class NoEmbedder:
    def embed(self, texts):  # pragma: no cover - must not be called
        raise AssertionError("few candidates must not be embedded")


def keywords(words) -> str:
    return json.dumps({"keywords": list(words)})


def context(replies, embedder=None) -> tuple[ToolContext, ScriptedProvider]:
    provider = ScriptedProvider(replies)
    return ToolContext.local(provider, embedder or WordEmbedder(), tool="semantic_file_search"), provider


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


# -- keywords (pure) ------------------------------------------------------------------------------


def test_eight_good_keywords_pass() -> None:
    check = check_keywords({"keywords": GOOD}, keywords(GOOD), CFG)
    assert check.valid == GOOD and check.problem is None and check.rejected == []


def test_bad_keywords_are_rejected_with_the_reason() -> None:
    reply = ["cipher", "authentication", "a", "two words", "the", "Cipher", "os.path", "jwt"]
    check = check_keywords({"keywords": reply}, "", CFG)
    assert check.valid == ["cipher", "jwt"]  # 'Cipher' repeats 'cipher'
    reasons = dict(check.rejected)
    assert reasons["authentication"] == "has 14 characters, more than 8"
    assert reasons["a"] == "is shorter than 3 characters"
    assert reasons["two words"] == reasons["os.path"] == "is not one word of letters, digits and underscores"
    assert reasons["the"] == "is a common English word"
    assert reasons["Cipher"] == "repeats an earlier keyword"
    assert check.problem.startswith("Only 2 of the 8 keywords were usable ('authentication' has 14 characters")


def test_keywords_are_found_in_loose_replies() -> None:
    assert check_keywords(None, 'Sure: ["cipher", "aes"]', CFG).valid == ["cipher", "aes"]
    assert check_keywords(None, "1. cipher\n2. nonce\n- block", CFG).valid == ["cipher", "nonce", "block"]
    assert check_keywords({"words": ["cipher"]}, "", CFG).valid == ["cipher"]
    empty = check_keywords(None, "I cannot help with that {", CFG)
    assert empty.valid == [] and empty.problem == 'Your reply held no keyword list; expected {"keywords": [8 words]}.'
    more = check_keywords({"keywords": GOOD + ["extra", "more"]}, "", CFG)
    assert more.valid == GOOD and more.problem is None


def test_fallback_keywords_come_from_the_text_by_frequency() -> None:
    words = fallback_keywords("How does AesCipher encrypt? encrypt_block encrypt the block", CFG)
    assert words[:3] == ["encrypt", "block", "aes"]
    assert all(3 <= len(w) <= 8 for w in words) and "the" not in words and len(words) <= 8


def test_keyword_request_asks_for_json_within_the_limits_and_a_retry_for_the_missing_ones() -> None:
    schema = keyword_schema(CFG)["properties"]["keywords"]
    assert (schema["minItems"], schema["maxItems"]) == (8, 8)
    assert (schema["items"]["minLength"], schema["items"]["maxLength"]) == (3, 8)
    first = keyword_request("Q?", HYDE, CFG)
    assert [m["role"] for m in first.messages] == ["system", "user"]
    assert first.messages[0]["content"].startswith("Extract exactly 8 different short technical keywords")
    assert "3 to 8 characters" in first.messages[0]["content"] and HYDE.strip() in first.messages[1]["content"]
    assert first.params["temperature"] == 0.0
    again = keyword_request("Q?", HYDE, CFG, have=["cipher", "aes"], problem="Only 2 of the 8 keywords were usable.")
    assert [m["role"] for m in again.messages] == ["system", "user"]  # not its own bad reply: it would copy it
    assert again.messages[0]["content"].startswith("Extract exactly 6 different")
    assert again.messages[1]["content"].endswith(
        "Only 2 of the 8 keywords were usable.\nKeywords already found: cipher, aes. Give 6 more, none of these."
    )
    assert again.response_schema["properties"]["keywords"]["maxItems"] == 6


def test_a_retry_counts_only_new_keywords() -> None:
    check = check_keywords({"keywords": ["aes", "nonce", "block"]}, "", CFG, have=["cipher", "aes", "key", "data", "encrypt", "iv_"])
    assert check.valid == ["nonce", "block"] and check.problem is None
    assert dict(check.rejected)["aes"] == "repeats an earlier keyword"
    short = check_keywords({"keywords": ["aes"]}, "", CFG, have=["cipher", "aes"])
    assert short.valid == [] and short.problem == "Only 0 of the 6 keywords were usable ('aes' repeats an earlier keyword)."


# -- the pipeline with a scripted model -------------------------------------------------------------


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    files = {f"vault/store_{i}.py": f"def save_{i}(data):\n    return data  # data\n" for i in range(6)}
    files["vault/crypto.py"] = (
        "import os\n\n\n"
        "def encrypt(key, data):\n"
        "    nonce = os.urandom(12)\n"
        "    return aes_cipher(key, nonce).encrypt(data)  # AES cipher, encrypt\n"
    )
    files["vault/cart.py"] = "def order_total(cart):\n    return sum(price for price in cart)  # order, price, cart\n"
    return write(tmp_path / "repos", files)


def test_keywords_are_extracted_and_many_files_are_ranked_by_similarity(vault: Path) -> None:
    embedder = WordEmbedder()
    ctx, provider = context([HYDE, keywords(GOOD)], embedder)
    result = semantic_search("How is data encrypted?", Corpus(load_texts(vault)), ctx, CFG)
    assert result.hyde == HYDE.strip() and result.keywords == GOOD and result.keyword_attempts == 1
    assert provider.calls == 2
    assert result.matched_files == 7 and len(result.candidates) == 7  # cart.py holds no keyword
    assert result.ranked is not None and result.ranked[0] == RankedFile("vault/crypto.py", 1, 6, result.ranked[0].score)
    assert result.ranked[0].score > 0.8 and result.paths[0] == "vault/crypto.py"
    assert embedder.calls[0][0] == HYDE.strip() and len(embedder.calls[0]) == 1 + 7  # the HyDE + one chunk per file
    events = [e.type_name for e in ctx.store.read_stream("tool:semantic_file_search:local")]
    assert events == ["LlmRequested", "LlmCompleted"] * 2  # recorded in the tool's own stream


def test_bad_keyword_replies_are_retried_up_to_three_times(vault: Path) -> None:
    bad = keywords(["encryption_key", "cipher", "aes", "x"])  # 2 usable
    worse = "no idea"
    replies = [HYDE, bad, worse, keywords(["cipher", "nonce", "block", "data", "key", "decrypt", "bytes"])]
    ctx, provider = context(replies)
    result = semantic_search("How is data encrypted?", Corpus(load_texts(vault)), ctx, CFG)
    assert provider.calls == 4 and result.keyword_attempts == 3
    assert result.keywords == ["cipher", "aes", "nonce", "block", "data", "key", "decrypt", "bytes"]
    second, third = provider.requests[2].messages[1]["content"], provider.requests[3].messages[1]["content"]
    assert second.endswith(
        "Only 2 of the 8 keywords were usable ('encryption_key' has 14 characters, more than 8; 'x' is shorter "
        "than 3 characters).\nKeywords already found: cipher, aes. Give 6 more, none of these."
    )
    assert third.endswith(
        "Only 0 of the 6 keywords were usable ('no idea' is not one word of letters, digits and underscores)."
        "\nKeywords already found: cipher, aes. Give 6 more, none of these."
    )
    assert provider.requests[3].response_schema["properties"]["keywords"]["minItems"] == 6


def test_after_the_retries_the_usable_keywords_or_the_text_itself_are_used(vault: Path) -> None:
    ctx, provider = context([HYDE, keywords(["nonce", "averyverylongword"])])  # always short of 8
    result = semantic_search("How is data encrypted?", Corpus(load_texts(vault)), ctx, CFG)
    assert provider.calls == 1 + 1 + 3 and result.keyword_attempts == 4
    assert result.keywords == ["nonce"] and result.paths == ["vault/crypto.py"]

    ctx, provider = context([HYDE, "nothing useful {"])
    result = semantic_search("How is data encrypted?", Corpus(load_texts(vault)), ctx, CFG)
    assert provider.calls == 5 and result.keywords == fallback_keywords("How is data encrypted?\n" + HYDE.strip(), CFG)

    no_retries = CFG.model_copy(update={"max_keyword_retries": 0})
    ctx, provider = context([HYDE, "nothing useful {"])
    semantic_search("How is data encrypted?", Corpus(load_texts(vault)), ctx, no_retries)
    assert provider.calls == 2


def test_few_candidates_are_returned_by_occurrences_without_embedding(vault: Path) -> None:
    ctx, _ = context([HYDE, keywords(["nonce", "cipher", "aes", "urandom", "order", "price", "zzz", "qqq"])], NoEmbedder())
    result = semantic_search("How is data encrypted?", Corpus(load_texts(vault)), ctx, CFG)
    assert result.ranked is None and result.chunks == 0
    assert [(c.path, c.total) for c in result.candidates] == [("vault/crypto.py", 7), ("vault/cart.py", 5)]


def test_the_best_chunk_gives_the_line_range(tmp_path: Path) -> None:
    filler = "".join(f"def helper_{i}(data):\n    return data + {i}\n\n\n" for i in range(40))
    secret = "def encrypt(data):\n    cipher = aes_cipher(nonce)\n    return cipher.encrypt(data)  # aes encrypt\n"
    text = filler + secret + filler
    root = write(tmp_path / "repos", {"r/big.py": text, **{f"r/s{i}.py": "data = 1\n" for i in range(6)}})
    small = CFG.model_copy(update={"chunk_size": 60, "chunk_overlap": 10})
    ctx, _ = context([HYDE, keywords(GOOD)])
    result = semantic_search("How is data encrypted?", Corpus(load_texts(root)), ctx, small)
    best = result.ranked[0]
    first = filler.count("\n") + 1
    assert best.path == "r/big.py"
    assert best.start_line <= first and best.end_line >= first + 2  # the chunk holding the secret
    assert best.end_line - best.start_line < 40  # a chunk, not the whole file
    assert result.chunks > 7


def test_vectors_are_kept_between_searches(vault: Path) -> None:
    embedder = WordEmbedder()
    ctx, _ = context(lambda r: keywords(GOOD) if r.response_schema else HYDE, embedder)
    corpus = Corpus(load_texts(vault))
    semantic_search("q1", corpus, ctx, CFG)
    semantic_search("q2", corpus, ctx, CFG)
    assert [len(c) for c in embedder.calls] == [8]  # the second search embeds nothing new


# -- ranking (pure) --------------------------------------------------------------------------------


def chunk(path: str, a: int, b: int) -> Chunk:
    return Chunk(path=path, start_line=a, end_line=b, text="", language="python")


def test_rank_files_keeps_each_files_best_chunk_by_cosine() -> None:
    chunks = [chunk("a.py", 1, 10), chunk("a.py", 8, 20), chunk("b.py", 1, 5), chunk("c.py", 1, 3), chunk("d.py", 1, 1)]
    vectors = [[1, 0], [1, 1], [0, 2], [3, 2], [0, 0]]
    ranked = rank_files([1, 1], chunks, vectors, top=3)
    assert [(r.path, r.start_line, r.end_line) for r in ranked] == [("a.py", 8, 20), ("c.py", 1, 3), ("b.py", 1, 5)]
    assert ranked[0].score == pytest.approx(1.0) and ranked[2].score == pytest.approx(2**-0.5)
    assert rank_files([1, 1], [], [], top=3) == []
    with pytest.raises(ValueError, match="2 chunks but vectors of shape"):
        rank_files([1, 1], chunks[:2], [[1, 0, 0], [1, 1, 0]], top=3)


# -- the tool and the rankers ----------------------------------------------------------------------


def test_the_tool_prints_ranked_files_with_line_ranges(vault: Path) -> None:
    ctx, _ = context([HYDE, keywords(GOOD)])
    out = SemanticFileSearch(root=str(vault), context=ctx, ranking="hyde").execute(query="How is data encrypted?")
    lines = out.splitlines()
    assert lines[0] == "Keywords from a hypothetical answer: " + ", ".join(GOOD)
    assert lines[1] == "7 files contain them; the top 7 by occurrences, cut into 7 chunks, ranked by similarity to the hypothetical answer:"
    assert lines[2].startswith("1. vault/crypto.py lines 1-6 (similarity ")
    assert len(lines) == 2 + 7 + 1 and lines[-1] == "Next: read_code(path, start_line, end_line) on one of these."


def test_the_tool_says_when_nothing_matches_and_refuses_bad_input(vault: Path) -> None:
    ctx, _ = context([HYDE, keywords(["zzzz", "qqqq", "wwww", "xxxx", "yyyy", "vvvv", "uuuu", "tttt"])])
    out = SemanticFileSearch(root=str(vault), context=ctx, ranking="hyde").execute(query="anything")
    assert out.splitlines()[1] == "No file contains any of them. Try search_keyword with a word from the question."
    with pytest.raises(ToolInputError, match="semantic_file_search needs a query"):
        SemanticFileSearch(root=str(vault), context=ctx, ranking="hyde").execute(query=" ")
    with pytest.raises(ToolInputError, match="^Refused: "):
        SemanticFileSearch(root=str(vault), context=ctx, ranking="hyde").execute(query="q", repo="../elsewhere")
    assert SemanticFileSearch.uses_context is True


def test_rankers_return_paths_relative_to_the_repository(vault: Path) -> None:
    repo = vault / "vault"
    rank = keyword_ranker(repo)
    assert rank("Where is the nonce made for the AES cipher?")[0] == "crypto.py"
    assert sorted(rank("data nonce")) == ["crypto.py"] + [f"store_{i}.py" for i in range(6)]
    ctx, _ = context(lambda r: keywords(GOOD) if r.response_schema else HYDE)
    assert hyde_ranker(repo, ctx)("How is data encrypted?")[0] == "crypto.py"


# -- configuration --------------------------------------------------------------------------------


def test_the_seed_numbers_are_the_defaults() -> None:
    assert SEMANTIC_SEARCH_CONFIG.model_dump(include={
        "chunk_size", "chunk_overlap", "max_files_to_search", "top_k_results",
        "max_results_with_lines", "num_keywords", "max_keyword_retries",
    }) == {
        "chunk_size": 500, "chunk_overlap": 100, "max_files_to_search": 50, "top_k_results": 5,
        "max_results_with_lines": 10, "num_keywords": 8, "max_keyword_retries": 3,
    }  # fmt: skip
    assert CODE_READING_CONFIG.max_lines == 200
    assert CodeQaConfig().max_iterations == 10 and CodeQaConfig().keyword_search.max_files == 50


def test_configuration_is_overridable_from_code_and_environment() -> None:
    env = {"CHORUS_CODEQA_CONFIG": '{"semantic_search": {"top_k_results": 2}, "code_reading": {"max_lines": 50}}'}
    config = CodeQaConfig.load({"semantic_search": {"num_keywords": 6}}, env=env)
    assert (config.semantic_search.top_k_results, config.semantic_search.num_keywords) == (2, 6)
    assert config.semantic_search.chunk_size == 500 and config.code_reading.max_lines == 50


@pytest.mark.parametrize(
    "overrides, env, message",
    [
        ({"semantic_search": {"chunk_sise": 3}}, {}, "semantic_search.chunk_sise: Extra inputs are not permitted"),
        ({"semantic_search": {"chunk_overlap": 600}}, {}, "chunk_overlap (600) must be smaller than chunk_size (500)"),
        ({}, {"CHORUS_CODEQA_CONFIG": "{nope"}, "CHORUS_CODEQA_CONFIG is not JSON"),
        ({}, {"CHORUS_CODEQA_CONFIG": "[1]"}, "CHORUS_CODEQA_CONFIG must be a JSON object"),
    ],
)
def test_bad_configuration_is_one_line(overrides, env, message) -> None:
    with pytest.raises(ConfigError) as e:
        CodeQaConfig.load(overrides, env=env)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_semantic_config_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="keyword_min_chars"):
        SemanticSearchConfig(keyword_min_chars=9)
