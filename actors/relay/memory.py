"""TurnMemory: the relay's vector memory of past turns (seed 004), a projection of the log.

The Builder's prompt carries the top few past turns most like its roadmap item. Those
turns come from Qdrant, where each builder and verifier turn is one point, embedded from
text made out of its events alone (rule 3: every read model is a projection):

    BatonPassed    role "builder":  the baton's builder_summary, files_changed and
                   verification_hints (the item's text is not in the event)
    TurnVerified   role "verifier": the status, the report, and the defect capsule's
                   type, severity, description and suggested fix

A point's id is uuid5(run_id, turn_id) and its payload {run_id, task_id, turn_id, role,
turn_number, content, position}, all read from the event, so indexing an event again
overwrites a point with itself and `rebuild` gives the same points.

The position processed lives in a marker point of a sibling collection
(`<collection>_position`), with the schema version of the content made here. Qdrant has
no transaction spanning the points and the marker, so `catch_up` writes the points
first and moves the marker after: a crash between the two re-indexes that batch, which
changes nothing (idempotent upserts), so the memory still ends as if it were one
transaction. A marker of another schema version, or a collection of another vector size
(another embedder), makes `catch_up` drop the memory and rebuild it from position 1,
as the projection runner does with a view of another version.

Where it lives: a Qdrant server (an http(s) URL), a local-mode folder (any other path),
or `:memory:` (tests). `from_settings` uses the server of CHORUS_QDRANT_URL or the
folder data_dir/relay_memory: not the repository index's data_dir/qdrant, because a
local folder is locked by one process at a time and a relay holds its memory open for
its whole run, which would lock `chorus index` out meanwhile.

`TurnRecall` is the Builder's `memory` lookup in a served relay: before each build it
catches the memory up from the log and returns the top 5 past turns of the run's task
most like the roadmap item. It opens a local folder only for the lookup, so the builder's
process (a Ray actor, or a restarted one) never keeps others locked out between turns.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from actors.runtime.errors import UserError
from actors.relay.events import BatonPassed, TurnVerified
from events.store import EventStore, Recorded

Embed = Callable[[list[str]], list[list[float]]]

SCHEMA_VERSION = 1  # of the content and payload made here: bump on change (memories rebuild)
TYPES = ("BatonPassed", "TurnVerified")
MAX_CONTENT = 2000  # characters of a turn kept: five of them must fit in a builder prompt
BATCH = 64  # events embedded and upserted at once
_NS = uuid.UUID("0c3a9d4e-7b21-4f5a-8e66-2d1f9b7a5c13")
_MARKER_ID = str(uuid.uuid5(_NS, "position"))


class MemoryLocked(UserError):
    """The local Qdrant folder is held by another process (a one-line error for the CLI)."""


def point_id(run_id: str, turn_id: str) -> str:
    """A turn's point: stable across re-indexing and rebuilds, distinct per run (a fork)."""
    return str(uuid.uuid5(_NS, f"{run_id}|{turn_id}"))


def turn_content(event: BatonPassed | TurnVerified) -> str:
    """The text a turn is embedded from and handed back as context, from its event alone."""
    if isinstance(event, BatonPassed):
        baton = event.baton
        lines = [f"builder turn {event.turn_number}: {baton.builder_summary.strip()}"]
        if baton.files_changed:
            lines.append("files changed: " + ", ".join(baton.files_changed))
        if baton.verification_hints:
            lines.append("verification hints: " + "; ".join(h.strip() for h in baton.verification_hints))
    else:
        lines = [f"verifier turn {event.turn_number}: {event.status}", event.report.strip()]
        capsule = event.defect_capsule
        if capsule is not None:
            lines.append(f"defect ({capsule.defect_type}, {capsule.severity}): {capsule.description.strip()}")
            if capsule.suggested_fix:
                lines.append(f"suggested fix: {capsule.suggested_fix.strip()}")
    text = "\n".join(line for line in lines if line)
    return text if len(text) <= MAX_CONTENT else text[: MAX_CONTENT - 3] + "..."


def _payload(recorded: Recorded) -> dict[str, Any] | None:
    e: Any = recorded.event
    if not isinstance(e, BatonPassed | TurnVerified):
        return None
    return {
        "run_id": e.run_id,
        "task_id": e.task_id,
        "turn_id": e.turn_id,
        "role": "builder" if isinstance(e, BatonPassed) else "verifier",
        "turn_number": e.turn_number,
        "content": turn_content(e),
        "position": recorded.position,
    }


class EmbedderChanged(ValueError):
    """The collection holds vectors of another size than the embedder makes."""


class TurnMemory:
    """The vector memory of relay turns. Open it, `catch_up(store)`, ask `similar(text)`;
    `close()` (or use it as a context manager) to free a local folder's lock."""

    def __init__(
        self,
        path_or_url: str | None,
        embed: Embed,
        collection: str = "relay_turns",
        *,
        wait_s: float = 10.0,
    ) -> None:
        self.location = path_or_url if path_or_url is not None else str(_default_folder())
        self.embed = embed
        self.collection = collection
        self.marker_collection = f"{collection}_position"
        self.wait_s = wait_s
        self._client: Any = None

    @classmethod
    def from_settings(cls, settings: Any, embed: Embed, collection: str = "relay_turns") -> TurnMemory:
        url = getattr(settings, "qdrant_url", None)
        return cls(url or str(Path(settings.data_dir) / "relay_memory"), embed, collection)

    # -- the client -------------------------------------------------------------------------

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = _open(self.location, self.wait_s)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def __enter__(self) -> TurnMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the fold ---------------------------------------------------------------------------

    def index(self, records: Iterable[Recorded]) -> int:
        """Upsert a point per BatonPassed and TurnVerified in `records` (others are
        skipped); returns how many. Does not move the tracked position: `catch_up` does."""
        written = 0
        batch: list[dict[str, Any]] = []
        for recorded in records:
            payload = _payload(recorded)
            if payload is not None:
                batch.append(payload)
            if len(batch) >= BATCH:
                written += self._upsert(batch)
                batch = []
        return written + self._upsert(batch)

    def _upsert(self, payloads: list[dict[str, Any]]) -> int:
        from qdrant_client import models  # lazily: heavy; only the memory's users need it

        if not payloads:
            return 0
        vectors = self.embed([p["content"] for p in payloads])
        if len(vectors) != len(payloads):
            raise ValueError(f"the embedder returned {len(vectors)} vectors for {len(payloads)} texts")
        self._ensure_collection(len(vectors[0]))
        points = [
            models.PointStruct(id=point_id(p["run_id"], p["turn_id"]), vector=list(v), payload=p)
            for p, v in zip(payloads, vectors, strict=True)
        ]
        self.client.upsert(self.collection, points=points, wait=True)
        return len(points)

    def _ensure_collection(self, dim: int) -> None:
        from qdrant_client import models  # lazily: heavy; only the memory's users need it

        if self.client.collection_exists(self.collection):
            size = self.client.get_collection(self.collection).config.params.vectors.size
            if size != dim:
                raise EmbedderChanged(
                    f"the relay memory {self.collection} holds {size}-dimensional vectors, "
                    f"the embedder makes {dim}: rebuild it"
                )
            return
        self.client.create_collection(
            self.collection, vectors_config=models.VectorParams(size=dim, distance=models.Distance.COSINE)
        )
        if _is_url(self.location):  # local mode has no payload indexes (it warns): a server's filters
            for key in ("task_id", "run_id", "turn_id"):
                self.client.create_payload_index(self.collection, key, field_schema=models.PayloadSchemaType.KEYWORD)

    # -- the position -----------------------------------------------------------------------

    def _marker(self) -> dict[str, Any] | None:
        if not self.client.collection_exists(self.marker_collection):
            return None
        found = self.client.retrieve(self.marker_collection, ids=[_MARKER_ID], with_payload=True)
        return dict(found[0].payload or {}) if found else None

    def position(self) -> int:
        """The last log position this memory has processed (0: none)."""
        marker = self._marker()
        return int(marker["position"]) if marker else 0

    def _track(self, position: int) -> None:
        from qdrant_client import models  # lazily: heavy; only the memory's users need it

        if not self.client.collection_exists(self.marker_collection):
            self.client.create_collection(
                self.marker_collection, vectors_config=models.VectorParams(size=1, distance=models.Distance.DOT)
            )
        payload = {"position": position, "schema_version": SCHEMA_VERSION, "collection": self.collection}
        point = models.PointStruct(id=_MARKER_ID, vector=[1.0], payload=payload)
        self.client.upsert(self.marker_collection, points=[point], wait=True)

    def catch_up(self, store: EventStore) -> int:
        """Index the relay turns after the tracked position up to the log's head; returns
        how many turns it indexed. Rebuilds first if the memory was made by another schema
        version or another embedder's vector size."""
        marker = self._marker()
        if marker is not None and marker.get("schema_version") != SCHEMA_VERSION:
            return self.rebuild(store)
        try:
            return self._catch_up(store, 0 if marker is None else int(marker["position"]))
        except EmbedderChanged:
            return self.rebuild(store)

    def _catch_up(self, store: EventStore, position: int) -> int:
        head = store.max_position()
        if position >= head:
            return 0
        indexed = 0
        batch: list[Recorded] = []
        for recorded in store.read_all(position + 1, to_position=head, types=TYPES, batch=BATCH):
            batch.append(recorded)
            if len(batch) >= BATCH:
                indexed += self.index(batch)
                self._track(batch[-1].position)  # after the points: a crash re-indexes, harmlessly
                batch = []
        indexed += self.index(batch)
        self._track(head)  # past the events of other types too: they are not read again
        return indexed

    def rebuild(self, store: EventStore) -> int:
        """Drop the memory and index the whole log again from position 1."""
        self.drop()
        return self._catch_up(store, 0)

    def drop(self) -> None:
        for name in (self.marker_collection, self.collection):
            if self.client.collection_exists(name):
                self.client.delete_collection(name)

    # -- reading ----------------------------------------------------------------------------

    def similar(
        self,
        text: str,
        k: int = 5,
        task_id: str | None = None,
        exclude_turn: str | None = None,
        run_id: str | None = None,
    ) -> list[str]:
        """The content of the k turns most like `text`, best first; of one task or run
        only if given, never the turn `exclude_turn`. The same content twice (a forked
        run's copy of a turn) is given once."""
        from qdrant_client import models  # lazily: heavy; only the memory's users need it

        if k < 1:
            raise ValueError(f"k must be at least 1, not {k}")
        if not self.client.collection_exists(self.collection):
            return []
        must = [
            models.FieldCondition(key=key, match=models.MatchValue(value=value))
            for key, value in (("task_id", task_id), ("run_id", run_id))
            if value is not None
        ]
        must_not = (
            [models.FieldCondition(key="turn_id", match=models.MatchValue(value=exclude_turn))]
            if exclude_turn is not None
            else []
        )
        query_filter = models.Filter(must=must or None, must_not=must_not or None) if must or must_not else None
        (vector,) = self.embed([text])
        response = self.client.query_points(
            self.collection, query=list(vector), query_filter=query_filter, limit=k * 3, with_payload=True
        )
        out: list[str] = []
        for point in response.points:
            content = (point.payload or {}).get("content")
            if content and content not in out:
                out.append(content)
            if len(out) == k:
                break
        return out

    def count(self) -> int:
        if not self.client.collection_exists(self.collection):
            return 0
        return int(self.client.count(self.collection, exact=True).count)

    def points(self) -> list[tuple[str, dict[str, Any]]]:
        """Every turn's (id, payload), in log order: for checks and dumps."""
        if not self.client.collection_exists(self.collection):
            return []
        out: list[tuple[str, dict[str, Any]]] = []
        offset = None
        while True:
            page, offset = self.client.scroll(
                self.collection, limit=256, offset=offset, with_payload=True, with_vectors=False
            )
            out.extend((str(p.id), dict(p.payload or {})) for p in page)
            if offset is None:
                break
        return sorted(out, key=lambda item: (item[1].get("position", 0), item[0]))


class TurnRecall:
    """`recall(text) -> [past turn text]`: the top `k` turns of task `task_id` most like
    `text`, the memory caught up from `store` first."""

    def __init__(self, memory: TurnMemory, store: EventStore, task_id: str | None, k: int = 5) -> None:
        self.memory = memory
        self.store = store
        self.task_id = task_id
        self.k = k

    @classmethod
    def from_settings(
        cls, settings: Any, store: EventStore, task_id: str | None, embed: Embed | None = None
    ) -> TurnRecall:
        """With the configured embedder (CHORUS_EMBEDDER; MiniLM, offline) unless `embed` is
        given; its model loads at the first turn that has something to embed."""
        if embed is None:
            from actors.runtime.embeddings import embedder_from_settings  # lazily: only a served relay

            embed = embedder_from_settings(settings).embed
        return cls(TurnMemory.from_settings(settings, embed), store, task_id)

    def __call__(self, text: str) -> list[str]:
        keep_open = self.memory.location == ":memory:" or _is_url(self.memory.location)
        try:
            self.memory.catch_up(self.store)
            return self.memory.similar(text, k=self.k, task_id=self.task_id)
        finally:
            if not keep_open:
                self.memory.close()  # a local folder: let go of its lock between turns


def _default_folder() -> Path:
    from actors.runtime.settings import Settings  # lazily: only when no location is given

    return Settings.from_env().data_dir / "relay_memory"


def _is_url(location: str) -> bool:
    return location.startswith(("http://", "https://"))


def _open(location: str, wait_s: float) -> Any:
    """A Qdrant client: a server for an http(s) URL, in memory for ':memory:', else a
    local-mode folder, waiting up to `wait_s` for another process to let go of it."""
    from qdrant_client import QdrantClient  # lazily: heavy; only the memory's users need it

    if _is_url(location):
        return QdrantClient(url=location, timeout=30)
    if location == ":memory:":
        return QdrantClient(location=":memory:")
    folder = Path(location).expanduser()
    folder.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + wait_s
    while True:
        try:
            return QdrantClient(path=str(folder))
        except RuntimeError as e:
            if "already accessed" not in str(e):
                raise
            if time.monotonic() > deadline:
                raise MemoryLocked(
                    f"the relay memory folder {folder} is locked by another process; "
                    "stop it or set CHORUS_QDRANT_URL to use a Qdrant server"
                ) from None
            time.sleep(0.2)
