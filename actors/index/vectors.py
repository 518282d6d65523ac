"""The one Qdrant layer: a collection per repository, chunks as points, a manifest per
collection saying which file contents (by hash) a *completed* index holds.

Local mode (a folder, the embedded default), a Qdrant server (`CHORUS_QDRANT_URL`), or on a
multi-node cluster without a server the vector store actor that owns the folder
(`actors.index.vector_actor`; `CHORUS_VECTORS=actor|local` to choose).
Local mode locks its folder for one process at a time, so callers open the index for a
piece of work and close it again (`open_index`); a folder another process holds is
reported as `IndexLocked` after a short wait, not as a stack trace.

The manifest is what makes a half-finished index visible: it is written `complete=False`
before anything changes and `complete=True` with the file hashes only at the end, so an
index cut short is never taken for a finished one, and the next run re-embeds what the
last *complete* manifest does not vouch for. It also names the `schema` of the embedded text
(path and text, or path, header and text; see `actors.index.indexer.text_to_embed`): an
index embedded another way is not trusted, and is rebuilt. A manifest written before the
schema was recorded embedded path and text in 1,200-character chunks (`UNRECORDED_SCHEMA`), and is rebuilt.

Chunks embedded with headers live in their own collection (`collection_for(..., headers=True)`),
so both variants of one repository can be kept and compared. `chunks()` reads every chunk's
payload back: the lexical side (`actors.index.hybrid`) is built from exactly that.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from actors.index.chunking import Chunk
from actors.runtime.errors import UserError

MANIFESTS = "chorus_manifests"
# What a collection's vectors embed; a change of format is a new schema (and a re-embedding).
# /2: chunks cut to the embedder's 256-token window (`chunking.window_chunks`), where /1 cut
# them at 1,200 characters, whose tails MiniLM never read.
PLAIN_SCHEMA = "path+text/2"
HEADER_SCHEMA = "path+header+text/2"
UNRECORDED_SCHEMA = "path+text/1"  # what a manifest that names no schema was embedded with
_NS = uuid.UUID("6f1c2a54-3b7e-4c1d-9a0e-5d8b7c6e4f21")


class IndexLocked(UserError):
    """The local Qdrant folder is held by another process (a one-line error for the CLI)."""


class IndexMissing(LookupError):
    """No completed index for that repository."""


@dataclass(frozen=True)
class Hit:
    path: str
    start_line: int
    end_line: int
    text: str
    language: str
    score: float

    @property
    def cite(self) -> str:
        return f"{self.path}:{self.start_line}-{self.end_line}"


@dataclass
class Manifest:
    collection: str
    source: str = ""
    complete: bool = False
    files: dict[str, str] = field(default_factory=dict)  # path -> content sha256
    chunks: int = 0
    dim: int = 0
    schema: str = PLAIN_SCHEMA


@dataclass(frozen=True)
class StoredChunk:
    """A chunk's payload as the collection holds it."""

    path: str
    start_line: int
    end_line: int
    text: str
    language: str
    header: str = ""


def collection_name(source: str) -> str:
    """One collection per repository, named from where it came from."""
    stem = Path(source.rstrip("/")).name.removesuffix(".git") or "repo"
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in stem)[:40]
    return f"repo_{safe}_{hashlib.sha1(source.encode()).hexdigest()[:10]}"


def collection_for(source: str, *, headers: bool = False) -> str:
    """The collection of one index variant: chunks embedded with headers have their own."""
    return collection_name(source) + ("_h" if headers else "")


def _dirs(path: str) -> list[str]:
    parts = path.split("/")[:-1]
    return ["/".join(parts[: i + 1]) + "/" for i in range(len(parts))]


class VectorIndex:
    def __init__(self, client: Any) -> None:
        self.client = client

    # -- manifest --------------------------------------------------------------------------

    def manifest(self, collection: str) -> Manifest | None:
        from qdrant_client import models  # lazily: heavy; only indexing and search need it

        if not self.client.collection_exists(MANIFESTS):
            return None
        found = self.client.retrieve(MANIFESTS, ids=[str(uuid.uuid5(_NS, collection))], with_payload=True)
        if not found:
            return None
        p = found[0].payload or {}
        del models
        return Manifest(
            collection=collection,
            source=p.get("source", ""),
            complete=bool(p.get("complete")),
            files=dict(p.get("files", {})),
            chunks=int(p.get("chunks", 0)),
            dim=int(p.get("dim", 0)),
            schema=str(p.get("schema", UNRECORDED_SCHEMA)),
        )

    def write_manifest(self, m: Manifest) -> None:
        from qdrant_client import models  # lazily: heavy; only indexing and search need it

        if not self.client.collection_exists(MANIFESTS):
            self.client.create_collection(
                MANIFESTS, vectors_config=models.VectorParams(size=1, distance=models.Distance.DOT)
            )
        payload = {
            "source": m.source, "complete": m.complete, "files": m.files, "chunks": m.chunks, "dim": m.dim,
            "schema": m.schema,
        }
        point = models.PointStruct(id=str(uuid.uuid5(_NS, m.collection)), vector=[1.0], payload=payload)
        self.client.upsert(MANIFESTS, points=[point], wait=True)

    # -- chunks ----------------------------------------------------------------------------

    def ensure_collection(self, collection: str, dim: int) -> None:
        from qdrant_client import models  # lazily: heavy; only indexing and search need it

        if self.client.collection_exists(collection):
            info = self.client.get_collection(collection)
            size = info.config.params.vectors.size  # type: ignore[union-attr]
            if size == dim:
                return
            self.client.delete_collection(collection)  # another embedder: start again
        self.client.create_collection(
            collection, vectors_config=models.VectorParams(size=dim, distance=models.Distance.COSINE)
        )

    def delete_files(self, collection: str, paths: Sequence[str]) -> None:
        from qdrant_client import models  # lazily: heavy; only indexing and search need it

        if not paths or not self.client.collection_exists(collection):
            return
        selector = models.FilterSelector(
            filter=models.Filter(must=[models.FieldCondition(key="path", match=models.MatchAny(any=list(paths)))])
        )
        self.client.delete(collection, points_selector=selector, wait=True)

    def upsert(self, collection: str, chunks: Sequence[Chunk], vectors: Sequence[Sequence[float]], hashes: dict[str, str]) -> None:
        from qdrant_client import models  # lazily: heavy; only indexing and search need it

        points = [
            models.PointStruct(
                id=str(uuid.uuid5(_NS, f"{collection}|{c.path}|{c.start_line}|{c.end_line}|{hashes[c.path]}")),
                vector=list(v),
                payload={
                    "path": c.path,
                    "dirs": _dirs(c.path),
                    "start_line": c.start_line,
                    "end_line": c.end_line,
                    "language": c.language,
                    "text": c.text,
                    "header": c.header,
                    "file_hash": hashes[c.path],
                },
            )
            for c, v in zip(chunks, vectors, strict=True)
        ]
        if points:
            self.client.upsert(collection, points=points, wait=True)

    def count(self, collection: str) -> int:
        if not self.client.collection_exists(collection):
            return 0
        return int(self.client.count(collection, exact=True).count)

    def chunks(self, collection: str) -> list[StoredChunk]:
        """Every chunk in the collection, by path and line."""
        if not self.client.collection_exists(collection):
            return []
        out: list[StoredChunk] = []
        offset = None
        while True:
            points, offset = self.client.scroll(
                collection, limit=512, offset=offset, with_payload=True, with_vectors=False
            )
            for p in points:
                q = p.payload or {}
                if "path" in q:
                    out.append(
                        StoredChunk(q["path"], q["start_line"], q["end_line"], q.get("text", ""),
                                    q.get("language", "text"), q.get("header", ""))
                    )
            if offset is None:
                break
        return sorted(out, key=lambda c: (c.path, c.start_line, c.end_line))

    def search(
        self,
        collection: str,
        vector: Sequence[float],
        *,
        limit: int = 10,
        path_prefix: str | None = None,
        language: str | None = None,
    ) -> list[Hit]:
        from qdrant_client import models  # lazily: heavy; only indexing and search need it

        must: list[Any] = []
        if path_prefix:
            prefix = path_prefix.strip("/")
            # a folder prefix ("pkg/") or one file ("pkg/mod.py")
            must.append(
                models.Filter(
                    should=[
                        models.FieldCondition(key="dirs", match=models.MatchValue(value=prefix + "/")),
                        models.FieldCondition(key="path", match=models.MatchValue(value=prefix)),
                    ]
                )
            )
        if language:
            must.append(models.FieldCondition(key="language", match=models.MatchValue(value=language)))
        response = self.client.query_points(
            collection,
            query=list(vector),
            query_filter=models.Filter(must=must) if must else None,
            limit=limit,
            with_payload=True,
        )
        return [
            Hit(
                path=p.payload["path"],
                start_line=p.payload["start_line"],
                end_line=p.payload["end_line"],
                text=p.payload["text"],
                language=p.payload["language"],
                score=float(p.score),
            )
            for p in response.points
            if p.payload
        ]


def qdrant_location(settings: Any) -> tuple[str | None, Path]:
    """(server URL or None, local folder) from the settings."""
    url = getattr(settings, "qdrant_url", None)
    folder = Path(getattr(settings, "data_dir", Path.home() / ".chorus")) / "qdrant"
    return url, folder


def uses_vector_actor(settings: Any) -> bool:
    """No server: the vector store actor when asked (`CHORUS_VECTORS=actor`) or, by
    default, on a multi-node cluster (a local folder cannot be shared by nodes)."""
    mode = getattr(settings, "vectors", "auto")
    if mode == "auto":
        from actors.index.vector_actor import on_a_cluster

        return on_a_cluster()
    return mode == "actor"


@contextmanager
def open_index(settings: Any, wait_s: float = 10.0) -> Iterator[VectorIndex]:
    """The vector index for a piece of work; local mode's folder lock is held only inside."""
    from qdrant_client import QdrantClient  # lazily: heavy; only indexing and search need it

    url, folder = qdrant_location(settings)
    if url:
        client = QdrantClient(url=url, timeout=30)
    elif uses_vector_actor(settings):
        from actors.index.vector_actor import RemoteQdrant, vector_actor

        client = RemoteQdrant(vector_actor(settings, folder))
    else:
        folder.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + wait_s
        while True:
            try:
                client = QdrantClient(path=str(folder))
                break
            except RuntimeError as e:
                if "already accessed" not in str(e) or time.monotonic() > deadline:
                    if "already accessed" in str(e):
                        raise IndexLocked(
                            f"the Qdrant folder {folder} is locked by another process; "
                            "stop it or set CHORUS_QDRANT_URL to use a Qdrant server"
                        ) from None
                    raise
                time.sleep(0.2)
    try:
        yield VectorIndex(client)
    finally:
        client.close()


def drop_collection(index: VectorIndex, collection: str) -> None:
    if index.client.collection_exists(collection):
        index.client.delete_collection(collection)
