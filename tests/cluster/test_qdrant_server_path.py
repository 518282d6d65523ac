"""With CHORUS_QDRANT_URL the index talks to a Qdrant server. No server binary can be
installed here, so the server path's code runs against qdrant-client's own engine (its
in-memory mode, the same client API a server answers): indexing, re-indexing, the manifest,
filtered search, all through `open_index` as the workloads call it."""

from __future__ import annotations

import pytest

from actors.index.indexer import embedded_text, index_repository
from actors.index.vectors import collection_name, open_index, uses_vector_actor
from actors.runtime.settings import Settings
from tests.cluster import vector_jobs
from tests.support import fake_research

URL = "http://qdrant.chorus.svc:6333"


@pytest.fixture
def server(monkeypatch):
    """qdrant_client.QdrantClient(url=...) answered by one in-memory engine that outlives
    each `open_index` (as a server outlives its clients); records how it was opened."""
    import qdrant_client

    engine = qdrant_client.QdrantClient(location=":memory:")
    opened: list[dict] = []

    class ServerClient:
        def __init__(self, **kwargs):
            opened.append(kwargs)

        def __getattr__(self, name):
            return getattr(engine, name)

        def close(self):
            opened.append({"closed": True})

    monkeypatch.setattr(qdrant_client, "QdrantClient", ServerClient)
    return opened


def test_the_server_path_indexes_and_searches_through_the_client_api(server, tmp_path, monkeypatch):
    monkeypatch.setenv("CHORUS_QDRANT_URL", URL)
    settings = Settings.from_env(data_dir=tmp_path / "data", store_url="memory://")
    repo = str(fake_research.make_repo(tmp_path / "repo"))
    collection = collection_name(repo)

    with open_index(settings) as index:
        first = index_repository(repo, index=index, embed=vector_jobs.embed, dim=vector_jobs.DIM, data_dir=settings.data_dir)
    with open_index(settings) as index:
        again = index_repository(repo, index=index, embed=vector_jobs.embed, dim=vector_jobs.DIM, data_dir=settings.data_dir)
        chunks = index.chunks(collection)
        manifest = index.manifest(collection)
        ledger = next(c for c in chunks if c.path == "pkg/ledger.py")
        query = vector_jobs.embed([embedded_text(ledger.path, ledger.header, ledger.text)])[0]
        top = index.search(collection, query, limit=1)
        only_colours = index.search(collection, query, limit=5, path_prefix="pkg/colours.py")

    assert server == [{"url": URL, "timeout": 30}, {"closed": True}] * 2  # a server, opened and closed per piece of work
    assert not (tmp_path / "data" / "qdrant").exists()  # no local folder
    assert first.files_embedded == 3 and again.files_unchanged == 3 and again.files_embedded == 0
    assert manifest.complete and manifest.chunks == len(chunks) == first.chunks
    assert (top[0].path, top[0].start_line) == ("pkg/ledger.py", ledger.start_line)
    assert only_colours and {h.path for h in only_colours} == {"pkg/colours.py"}


def test_a_server_url_wins_over_the_vector_actor(server, tmp_path):
    settings = Settings.from_env(data_dir=tmp_path, store_url="memory://", qdrant_url=URL, vectors="actor")
    assert uses_vector_actor(settings)  # without the URL, the actor would serve it
    with open_index(settings) as index:
        assert type(index.client).__name__ == "ServerClient"
    assert server[0] == {"url": URL, "timeout": 30}
