"""The repository index on a real Qdrant (local mode, a folder): what gets indexed, re-indexing
by content hash, filters, a cut-short index, a locked folder, and a real MiniLM search."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import textwrap
import time

import pytest

from actors.index.indexer import index_repository
from actors.index.repository import RepositoryError
from actors.index.vectors import IndexLocked, collection_name, open_index
from actors.runtime.settings import Settings
from tests.support import fake_research

DIM = 16


class CountingEmbedder:
    """Deterministic vectors from a hash; counts what it embeds; can fail on the Nth batch."""

    dim = DIM

    def __init__(self, fail_on_batch: int | None = None) -> None:
        self.texts: list[str] = []
        self.batches = 0
        self.fail_on_batch = fail_on_batch

    def embed(self, texts):
        self.batches += 1
        if self.fail_on_batch == self.batches:
            raise RuntimeError("embedder died")
        self.texts.extend(texts)
        out = []
        for t in texts:
            h = hashlib.sha256(t.encode()).digest()
            out.append([b / 255 + 0.01 for b in h[:DIM]])
        return out


@pytest.fixture
def settings(tmp_path):
    return Settings.from_env(data_dir=tmp_path / "data", store_url="memory://")


def _index(settings, repo, embedder):
    with open_index(settings) as index:
        return index_repository(str(repo), index=index, embed=embedder.embed, dim=embedder.dim, data_dir=settings.data_dir)


def test_text_files_are_indexed_and_binary_huge_empty_ones_counted(settings, tmp_path):
    repo = fake_research.make_repo(tmp_path / "repo")
    (repo / "empty.py").write_text("\n\n")
    report = _index(settings, repo, CountingEmbedder())
    assert (report.files, report.files_embedded, report.files_unchanged) == (3, 3, 0)
    assert (report.skipped_binary, report.skipped_large, report.skipped_empty) == (2, 1, 1)
    assert report.chunks == report.chunks_embedded > 0
    assert "3 files" in report.summary() and "3 binary or huge files skipped" in report.summary()


def test_reindexing_embeds_only_changed_files_and_drops_removed_ones(settings, tmp_path):
    repo = fake_research.make_repo(tmp_path / "repo")
    _index(settings, repo, CountingEmbedder())
    (repo / "pkg" / "colours.py").write_text("RED = 10\n")
    (repo / "README.md").unlink()
    again = CountingEmbedder()
    report = _index(settings, repo, again)
    assert (report.files, report.files_embedded, report.files_unchanged, report.files_removed) == (2, 1, 1, 1)
    assert again.texts and all(t.startswith("pkg/colours.py") for t in again.texts)
    with open_index(settings) as index:
        paths = {h.path for h in index.search(collection_name(str(repo)), [0.5] * DIM, limit=100)}
    assert paths == {"pkg/colours.py", "pkg/ledger.py"}


def test_filters_by_path_prefix_and_language(settings, tmp_path):
    repo = fake_research.make_repo(tmp_path / "repo")
    _index(settings, repo, CountingEmbedder())
    name = collection_name(str(repo))
    with open_index(settings) as index:
        under_pkg = {h.path for h in index.search(name, [0.5] * DIM, limit=100, path_prefix="pkg")}
        one_file = {h.path for h in index.search(name, [0.5] * DIM, limit=100, path_prefix="pkg/ledger.py")}
        markdown = {h.path for h in index.search(name, [0.5] * DIM, limit=100, language="markdown")}
    assert under_pkg == {"pkg/ledger.py", "pkg/colours.py"}
    assert one_file == {"pkg/ledger.py"} and markdown == {"README.md"}


def test_an_index_cut_short_is_not_taken_for_complete(settings, tmp_path, monkeypatch):
    import actors.index.indexer as indexer

    repo = fake_research.make_repo(tmp_path / "repo")
    monkeypatch.setattr(indexer, "EMBED_BATCH", 1)  # one chunk per batch: fail part-way
    with pytest.raises(RuntimeError, match="embedder died"):
        _index(settings, repo, CountingEmbedder(fail_on_batch=2))
    with open_index(settings) as index:
        manifest = index.manifest(collection_name(str(repo)))
    assert manifest is not None and manifest.complete is False and manifest.files == {}
    report = _index(settings, repo, CountingEmbedder())
    assert report.files_unchanged == 0 and report.files_embedded == 3  # nothing trusted
    with open_index(settings) as index:
        assert index.manifest(collection_name(str(repo))).complete
        assert index.count(collection_name(str(repo))) == report.chunks


def test_missing_and_empty_repositories_are_refused(settings, tmp_path):
    with pytest.raises(RepositoryError, match="does not exist"):
        _index(settings, tmp_path / "nope", CountingEmbedder())
    (tmp_path / "bare").mkdir()
    with pytest.raises(RepositoryError, match="no text files"):
        _index(settings, tmp_path / "bare", CountingEmbedder())
    with pytest.raises(RepositoryError, match="cannot clone"):
        _index(settings, "file:///nonexistent/x.git", CountingEmbedder())
    assert not (settings.data_dir / "repos" / f"{collection_name('file:///nonexistent/x.git')}.partial").exists()


def test_a_folder_locked_by_another_process_is_one_clear_error(settings):
    folder = settings.data_dir / "qdrant"
    folder.mkdir(parents=True)
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys, time
            from qdrant_client import QdrantClient
            c = QdrantClient(path={str(folder)!r})
            print("held", flush=True)
            time.sleep(60)
        """)],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        with pytest.raises(IndexLocked, match="locked by another process"):
            with open_index(settings, wait_s=1.0):
                pass
        assert time.monotonic() - started < 30
    finally:
        holder.kill()
        holder.wait()


def test_minilm_search_finds_the_answer_file(settings, tmp_path):
    from actors.runtime.registry import Registry

    repo = fake_research.make_repo(tmp_path / "repo")
    embedder = Registry.get_embedder("minilm")
    _index(settings, repo, embedder)
    with open_index(settings) as index:
        hits = index.search(collection_name(str(repo)), embedder.embed(["which class has a record method that appends a payment to its entries"])[0], limit=3)
    assert hits[0].path == "pkg/ledger.py"
