"""Vectors on a cluster: without a Qdrant server, one detached, named vector-store actor owns
the Qdrant folder and serves every node; the research and code-question workloads run
unchanged on the multi-node cluster. With CHORUS_QDRANT_URL the same code talks to a
Qdrant server (checked against qdrant-client's own local engine behind that code path)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from actors.index.vectors import open_index, uses_vector_actor
from actors.runtime.settings import Settings
from tests.cluster.conftest import last_message, running_cluster
from tests.support import codeqa_llm, fake_research

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def three_nodes():
    """A head (with `chorus_vectors`) and two workers (with `chorus_llm`), shared by this
    module's tests, which change nothing about the cluster itself."""
    with running_cluster() as cluster:
        cluster.start_head()
        cluster.add_worker("w1")
        cluster.add_worker("w2")
        yield cluster


def test_an_index_built_from_one_node_is_searched_from_another(three_nodes, tmp_path):
    cluster = three_nodes
    repo = str(fake_research.make_repo(tmp_path / "repo"))
    data = tmp_path / "data"
    ports = [str(cluster.nodes[name].node_manager_port) for name in ("w1", "w2", "head")]
    out = subprocess.run(
        [sys.executable, "-m", "tests.cluster.vector_jobs", cluster.address, repo, str(data), *ports],
        capture_output=True, text=True, timeout=600, env=cluster.env(),
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    body = last_message(out.stdout)
    (w1, w2, head), built, found, again = body["nodes"], body["built"], body["found"], body["again"]

    assert (built["node"], found["node"]) == (w1, w2) and built["actor"]
    assert built["chunks"] > 0 and len(found["chunks"]) == built["chunks"] and found["complete"]
    assert [tuple(t) for t in found["tops"]] == [tuple(c) for c in found["chunks"]]  # each chunk tops its own search
    # One actor, on the node with `chorus_vectors`, owns the folder; a search from that
    # node too (where local mode would find the folder locked) goes through it.
    assert body["where"] == {"node_id": head, "folder": str(data / "qdrant")}
    assert again["node"] == head and again["tops"] == found["tops"]


def test_embedded_mode_keeps_the_local_folder(tmp_path):
    """No Ray (or one node): local mode, as before: the folder is opened in this process."""
    settings = Settings.from_env(data_dir=tmp_path / "data", store_url="memory://")
    assert not uses_vector_actor(settings)
    with open_index(settings) as index:
        assert type(index.client).__name__ == "QdrantClient"
    assert (tmp_path / "data" / "qdrant").is_dir()


CLIENT = """
import json, sys
from pathlib import Path
from actors import Client
from actors.codeqa.orchestrator import TOOLS
from actors.testing.model import ScriptedProvider
from tests.support import codeqa_llm, fake_research

address, tmp = sys.argv[1], Path(sys.argv[2])
out = {}
with Client(address=address, llm=ScriptedProvider(fake_research.researcher)) as c:
    run = c.submit("Where are payments recorded?", kind="researcher", repo=str(fake_research.make_repo(tmp / "repo")))
    out["research"] = run.wait(timeout=400).__dict__ | {"error": str(run.result.error)}
with Client(address=address, llm=ScriptedProvider(codeqa_llm.orchestrator)) as c:
    repos = codeqa_llm.make_repos(tmp / "repos")
    run = c.submit("How is a discount code applied?", root=repos, kind="orchestrator", tools=list(TOOLS))
    out["codeqa"] = run.wait(timeout=400).__dict__ | {"error": str(run.result.error)}
import ray
from actors.index.vector_actor import NAMESPACE, actor_name
from actors.runtime.settings import Settings
folder = Settings.from_env().data_dir / "qdrant"
out["vector_actor"] = ray.get(ray.get_actor(actor_name(folder), namespace=NAMESPACE).where.remote())
out["nodes"] = {n["NodeID"]: n["NodeManagerPort"] for n in ray.nodes() if n["Alive"]}
print("@@chorus " + json.dumps(out, default=str))
"""


def test_research_and_code_questions_run_unchanged_on_the_cluster(three_nodes, postgres_url, tmp_path):
    cluster = three_nodes
    env = cluster.env({
        "CHORUS_STORE_URL": postgres_url, "CHORUS_DATA_DIR": str(tmp_path / "data"),
        "CHORUS_PLACEMENT": "agent=resource:chorus_llm,vectors=resource:chorus_vectors",
    })  # fmt: skip
    out = subprocess.run(
        [sys.executable, "-c", CLIENT, cluster.address, str(tmp_path)],
        capture_output=True, text=True, timeout=900, env=env,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    body = last_message(out.stdout)
    research, codeqa = body["research"], body["codeqa"]
    assert research["status"] == "completed", research["error"]
    assert "LEDGER-42" in research["answer"] and "pkg/ledger.py:" in research["answer"].split("## Sources")[1]
    assert codeqa["status"] == "completed", codeqa["error"]
    assert codeqa_llm.ANSWER in codeqa["answer"] and "shop/shop/billing.py:9" in codeqa["answer"]
    # Their vectors went through the one vector actor, on the node that has `chorus_vectors`.
    head = next(i for i, port in body["nodes"].items() if port == cluster.nodes["head"].node_manager_port)
    assert body["vector_actor"]["node_id"] == head


def test_the_readme_steps_run_a_goal_on_the_cluster(three_nodes, postgres_url, tmp_path):
    """Step 3 of the README's cluster section, as a user types it: the CLI with the
    cluster's address and a shared store in the environment (steps 1 and 2 are the
    `ray start` commands this module's cluster was started with)."""
    from tests.support import fake_llm, sim_endpoint

    cluster = three_nodes
    fake_llm.make_repo(tmp_path)
    chorus = str(Path(sys.executable).parent / "chorus")
    with sim_endpoint.serving(fake_llm.search_read_answer) as llm_url:
        env = cluster.env({
            "CHORUS_RAY_ADDRESS": cluster.address, "CHORUS_STORE_URL": postgres_url,
            "CHORUS_LLM_BASE_URL": llm_url, "CHORUS_LLM_STRUCTURED": "json_object",
            "CHORUS_PLACEMENT": "agent=resource:chorus_llm+spread", "CHORUS_DATA_DIR": str(tmp_path / "data"),
        })  # fmt: skip
        out = subprocess.run(
            [chorus, "run", "What is the marker?", "--root", str(tmp_path)],
            capture_output=True, text=True, timeout=300, env=env,
        )  # fmt: skip
        listed = subprocess.run([chorus, "runs"], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "ALPHA-7" in out.stdout
    run_id = re.search(r"^run ([0-9a-f]+)", out.stderr + out.stdout, re.M).group(1)
    assert listed.returncode == 0 and run_id in listed.stdout
