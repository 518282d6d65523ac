"""Losing a worker node mid-run, on a real three-node cluster (head + two workers, each a
raylet of its own) with the PostgreSQL store: the agents on the lost node restart on the
surviving one and every run completes, with no event lost or written twice."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.cluster.conftest import (
    check_the_log,
    first_message,
    go_ahead,
    last_message,
    start_runs_client,
)
from tests.support import fake_llm, sim_endpoint

pytestmark = [pytest.mark.ray, pytest.mark.postgres]

RUNS = 20
# The LLM-heavy agents: only on nodes with the model, spread over them, at most 4 live per
# node (each takes 0.25 of the node's `chorus_llm: 1`), so 20 runs queue for 8 places.
PLACEMENT = "agent=resource:chorus_llm:0.25+spread"


def test_a_lost_worker_node_loses_no_run_and_no_event(local_cluster, postgres_url, tmp_path):
    cluster = local_cluster
    cluster.start_head()  # no chorus_llm: agents never land here
    cluster.add_worker("w1")  # chorus_llm, from deploy/ray-cluster.yaml
    cluster.add_worker("w2")
    fake_llm.make_repo(tmp_path)
    with sim_endpoint.serving(fake_llm.slow_reader) as llm_url:  # the model, over HTTP, for every node
        env = cluster.env({
            "CHORUS_STORE_URL": postgres_url, "CHORUS_LLM_BASE_URL": llm_url,
            "CHORUS_LLM_STRUCTURED": "json_object", "CHORUS_PLACEMENT": PLACEMENT,
            "CHORUS_DATA_DIR": str(tmp_path / "data"),
        })  # fmt: skip
        client = start_runs_client(cluster, env, tmp_path, RUNS, midrun=6)
        try:
            first = first_message(client)
            by_port = {port: node_id for node_id, port in first["nodes"].items()}
            w1, w2 = (by_port[cluster.nodes[name].node_manager_port] for name in ("w1", "w2"))
            placed = first["placed"]
            assert {n for n in placed.values() if n} == {w1, w2}  # spread over both workers
            assert first["client_node"] not in (w1, w2)  # the client's driver is not on a worker
            on_w1 = {r for r, n in placed.items() if n == w1}
            cluster.kill_node("w1")
            out, err = go_ahead(client)
        finally:
            if client.poll() is None:
                client.kill()
                client.wait()
    assert client.returncode == 0, err[-3000:]
    report = last_message(out)

    # N runs, 1 node removed, all completed.
    assert Counter(report["results"].values()) == Counter({"completed": RUNS}), report["errors"]
    # The agents that were on the lost node restarted, on the surviving one.
    assert {a["node"] for a in report["actors"].values()} == {w2}
    assert on_w1 and all(report["actors"][r]["restarts"] >= 1 for r in on_w1)
    # From the log: 0 lost, 0 duplicated, versions contiguous, state = fold of the stream.
    check_the_log(postgres_url, report["actors"])
