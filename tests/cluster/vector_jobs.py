"""Work the vector tests send to chosen nodes (Ray workers import it by name)."""

from __future__ import annotations

import hashlib

import ray

from actors.index.indexer import embedded_text, index_repository
from actors.index.vectors import collection_name, open_index, uses_vector_actor

DIM = 16


def embed(texts):
    """Deterministic vectors from a hash: the same text, the same vector, on every node."""
    return [[b / 255 + 0.01 for b in hashlib.sha256(t.encode()).digest()[:DIM]] for t in texts]


def build(settings, repo: str) -> dict:
    with open_index(settings) as index:
        report = index_repository(repo, index=index, embed=embed, dim=DIM, data_dir=settings.data_dir)
    return {"node": ray.get_runtime_context().get_node_id(), "chunks": report.chunks, "actor": uses_vector_actor(settings)}


def search(settings, repo: str) -> dict:
    """Every chunk the index holds, each searched for by its own embedded text: the top
    hit must be that chunk."""
    collection = collection_name(repo)
    with open_index(settings) as index:
        chunks = index.chunks(collection)
        tops = [index.search(collection, embed([embedded_text(c.path, c.header, c.text)])[0], limit=1)[0] for c in chunks]
        manifest = index.manifest(collection)
    return {
        "node": ray.get_runtime_context().get_node_id(),
        "chunks": [(c.path, c.start_line) for c in chunks],
        "tops": [(h.path, h.start_line) for h in tops],
        "complete": bool(manifest and manifest.complete),
    }


def main() -> None:
    """python -m tests.cluster.vector_jobs ADDRESS REPO DATA_DIR BUILD_PORT SEARCH_PORT HEAD_PORT

    Joins the cluster, builds the index from the node whose node manager listens on
    BUILD_PORT, searches it from the one on SEARCH_PORT and again from the one on HEAD_PORT
    (where the vector actor is), and prints what each saw."""
    import json
    import sys
    from pathlib import Path

    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from actors.index.vector_actor import NAMESPACE, actor_name
    from actors.runtime.settings import Settings

    address, repo, data_dir, *ports = sys.argv[1:]
    # The vector actor keeps its folder on the node with `chorus_vectors` (the head).
    settings = Settings.from_env(data_dir=Path(data_dir), store_url="memory://", placement="vectors=resource:chorus_vectors")
    ray.init(address=address, namespace="chorus-tests", include_dashboard=False, log_to_driver=False)
    ids = {n["NodeManagerPort"]: n["NodeID"] for n in ray.nodes() if n["Alive"]}
    build_node, search_node, head = (ids[int(p)] for p in ports)

    def on(node: str, fn, *args):
        task = ray.remote(num_cpus=0)(fn).options(scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False))
        return ray.get(task.remote(*args), timeout=300)

    out = {"nodes": [build_node, search_node, head]}
    out["built"] = on(build_node, build, settings, repo)
    out["found"] = on(search_node, search, settings, repo)
    server = ray.get_actor(actor_name(settings.data_dir / "qdrant"), namespace=NAMESPACE)
    out["where"] = ray.get(server.where.remote())
    out["again"] = on(head, search, settings, repo)
    print("@@chorus " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
