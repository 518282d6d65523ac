"""The vector store on a cluster without a Qdrant server: one detached, named Ray actor owns
the Qdrant local folder and serves every node's searches and upserts.

Qdrant's local mode is one folder locked by one process, so nodes cannot share it. Here the
one process is this actor: `VectorIndex` (actors.index.vectors) talks to it through
`RemoteQdrant`, which has the same methods as the `QdrantClient` calls it makes, so the
index code is the same for local mode, a Qdrant server and this actor.

The actor is detached (it outlives the run and the client that created it) and named after
its folder (`chorus-vectors-<hash>`), so every process of the cluster that is configured
alike reaches the same one; `get_if_exists` makes creating it race-free. Ray restarts it if
it dies; on a restart it reopens its folder. The folder is on the node the actor runs on:
pin it with a placement rule (`CHORUS_PLACEMENT="vectors=resource:chorus_vectors"`, that
resource declared by the node with the disk) or give it a shared volume, or the index
moves with the actor only as far as the disk does.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from actors.runtime.placement import ray_options

NAMESPACE = "chorus"  # one per cluster, whatever namespace a job runs in

# What `VectorIndex` asks of a Qdrant client: nothing else crosses to the actor.
METHODS = frozenset({
    "collection_exists", "get_collection", "create_collection", "delete_collection",
    "retrieve", "upsert", "delete", "count", "scroll", "query_points",
})  # fmt: skip


def actor_name(folder: Path) -> str:
    return "chorus-vectors-" + hashlib.sha1(str(Path(folder).resolve()).encode()).hexdigest()[:12]


class VectorStoreActor:
    """Holds `QdrantClient(path=folder)` for as long as it lives; calls run one at a time
    (Ray's default for an actor), as local mode requires."""

    def __init__(self, folder: str) -> None:
        from qdrant_client import QdrantClient  # lazily: heavy

        Path(folder).mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self.client = QdrantClient(path=folder)

    def call(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if method not in METHODS:
            raise AttributeError(f"the vector store actor does not serve {method!r}")
        return getattr(self.client, method)(*args, **kwargs)

    def where(self) -> dict[str, str]:
        """Which node and folder serve the index (for checks and `ray list actors`)."""
        import ray

        return {"node_id": ray.get_runtime_context().get_node_id(), "folder": self.folder}


class RemoteQdrant:
    """A stand-in for `QdrantClient` whose calls run in the vector store actor."""

    def __init__(self, actor: Any, timeout_s: float = 60.0) -> None:
        self.actor = actor
        self.timeout_s = timeout_s

    def __getattr__(self, method: str) -> Any:
        if method.startswith("_") or method not in METHODS:
            raise AttributeError(method)

        def call(*args: Any, **kwargs: Any) -> Any:
            import ray

            return ray.get(self.actor.call.remote(method, args, kwargs), timeout=self.timeout_s)

        return call

    def close(self) -> None:
        """Nothing to close here: the actor keeps its folder open for everyone."""


def vector_actor(settings: Any, folder: Path) -> Any:
    """The cluster's vector store actor for `folder`: found by name, or created (detached)."""
    import ray  # lazily: only the cluster path needs Ray

    placed = ray_options(getattr(settings, "placement", ""), "vectors")
    return (
        ray.remote(VectorStoreActor)
        .options(
            name=actor_name(folder),
            namespace=NAMESPACE,
            lifetime="detached",
            get_if_exists=True,
            max_restarts=-1,
            max_task_retries=-1,
            num_cpus=0,
            **placed,
        )
        .remote(str(folder))
    )


def on_a_cluster() -> bool:
    """This process is connected to Ray and the cluster has more than one node."""
    import sys

    if "ray" not in sys.modules:
        return False
    import ray

    if not ray.is_initialized():
        return False
    return sum(1 for node in ray.nodes() if node.get("Alive")) > 1
