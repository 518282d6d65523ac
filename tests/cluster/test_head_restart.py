"""Losing the head mid-run. With GCS fault tolerance (the cluster's state in Redis, as
deploy/ray-cluster.yaml starts the head), a head that comes back at the same address
picks the cluster up: the worker nodes reconnect, the actors on them keep running, every
run completes, and new runs can start.

What Ray cannot keep: anything on the head node itself. A driver attached to the head's
raylet dies with it, and the actors it owns die with their owner (Ray's fate sharing), so
its runs stop where the log says; `test_a_client_on_the_lost_head_loses_its_runs_actors...`
shows what is lost and how a new client recovers: the log holds every event appended
before the loss, and the run is continued by forking it from its last position
(`chorus fork RUN_ID --at POSITION` from the command line)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections import Counter

import pytest

from actors.agent.actor import agent_stream
from events.store import EventStore
from tests.cluster.conftest import (
    check_the_log,
    first_message,
    go_ahead,
    last_message,
    redis_keys,
    require_redis,
    start_runs_client,
    wait_for,
)
from tests.support import fake_llm, sim_endpoint

pytestmark = [pytest.mark.ray, pytest.mark.postgres]

RUNS, LATE = 4, 1


def test_runs_complete_across_a_head_restart(local_cluster, postgres_url, tmp_path):
    cluster = local_cluster
    cluster.redis = require_redis()
    cluster.start_head()
    cluster.add_worker("w1", ip="127.0.0.2")  # the client's machine, not the head
    cluster.add_worker("w2")
    assert redis_keys(cluster.namespace)  # the GCS keeps its tables in Redis
    fake_llm.make_repo(tmp_path)
    with sim_endpoint.serving(fake_llm.slow_reader) as llm_url:
        env = runs_env(cluster, postgres_url, llm_url, tmp_path, CHORUS_TEST_NODE_IP="127.0.0.2")
        client = start_runs_client(cluster, env, tmp_path, RUNS, midrun=2, late=LATE)
        try:
            first = first_message(client)
            by_port = {port: node for node, port in first["nodes"].items()}
            old_head = by_port[cluster.nodes["head"].node_manager_port]
            assert first["client_node"] == by_port[cluster.nodes["w1"].node_manager_port]
            cluster.restart_head()
            out, err = go_ahead(client)  # and one more run: new actors need the GCS back
        finally:
            if client.poll() is None:
                client.kill()
                client.wait()
    assert client.returncode == 0, err[-3000:]
    report = last_message(out)
    assert Counter(report["results"].values()) == Counter({"completed": RUNS + LATE}), report["errors"]
    assert old_head not in {a["node"] for a in report["actors"].values()}
    assert all(a["restarts"] == 0 for a in report["actors"].values())  # they ran on through it
    check_the_log(postgres_url, report["actors"])


def runs_env(cluster, postgres_url: str, llm_url: str, tmp_path, **extra: str) -> dict[str, str]:
    return cluster.env({
        "CHORUS_STORE_URL": postgres_url, "CHORUS_LLM_BASE_URL": llm_url,
        "CHORUS_LLM_STRUCTURED": "json_object", "CHORUS_PLACEMENT": "agent=resource:chorus_llm+spread",
        "CHORUS_DATA_DIR": str(tmp_path / "data"), **extra,
    })  # fmt: skip


RECOVER = """
import json, sys
from actors import Client
from actors.runtime.run import TERMINAL_TYPES

address, run_ids = sys.argv[1], sys.argv[2].split(",")
out = {}
with Client(address=address) as c:
    for run_id in run_ids:
        before = c.run_state(run_id).status
        records = c.events(run_id)
        # The run's actor died with its owner: close the run as failed (actor_died) if the
        # old client did not live to, then continue it live from its last event.
        c.fail_run(run_id, RuntimeError("the client that owned this run was lost with the head node"))
        fork = c.fork(run_id, records[-1].position)
        result = fork.wait(timeout=300)
        out[run_id] = {"before": before, "after": c.run_state(run_id).status,
                       "error": c.run_result(run_id).error.type, "fork": fork.run_id, "fork_status": result.status,
                       "fork_answer": result.answer, "last_type": records[-1].event.type_name}
print("@@chorus " + json.dumps(out))
"""


def test_a_client_on_the_lost_head_loses_its_runs_actors_and_a_new_client_continues_them(
    local_cluster, postgres_url, tmp_path
):
    """The client's driver on the head node: the head machine is lost, the driver with it,
    and the agents it owned die too (Ray's fate sharing), so its runs stop mid-way with no
    terminal event. Nothing in the log is lost: a new client closes each run as failed and
    forks it from its last recorded position; the fork completes.

    The client is killed with the head's processes, as it would be on a lost machine. (Left
    alive without its raylet, it used to crash only because its runs' calls gave up after
    3 retries; a run's calls are now retried until Ray says the actor is dead, which a
    driver cut off from its raylet may never hear.)"""
    cluster = local_cluster
    cluster.redis = require_redis()
    cluster.start_head()
    cluster.add_worker("w1")
    fake_llm.make_repo(tmp_path)
    with sim_endpoint.serving(fake_llm.slow_reader) as llm_url:
        env = runs_env(cluster, postgres_url, llm_url, tmp_path)
        client = start_runs_client(cluster, env, tmp_path, 2, midrun=2)
        try:
            first = first_message(client)
            run_ids = list(first["placed"])
        finally:
            client.kill()  # the client's machine is the head: lost with it
            client.wait()
        cluster.restart_head()
        store = EventStore(postgres_url)
        try:
            # Nothing is still writing (3 s without a new event): the agents died with their owner.
            def stalled_streams():
                before = {r: store.read_stream(agent_stream(r)) for r in run_ids}
                time.sleep(3)
                after = {r: len(store.read_stream(agent_stream(r))) for r in run_ids}
                return before if after == {r: len(e) for r, e in before.items()} else None

            stalled = wait_for(stalled_streams, 60, "the lost client's agents to stop writing", every=0)
        finally:
            store.close()
        out = subprocess.run(
            [sys.executable, "-c", RECOVER, cluster.address, ",".join(run_ids)],
            capture_output=True, text=True, timeout=400, env=env,
        )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    report = last_message(out.stdout)
    for run_id, events in stalled.items():
        assert [e.version for e in events] == list(range(1, len(events) + 1))  # what was written stays
        got = report[run_id]
        # Closed as failed (`actor_died`) by the new client: the log says what happened.
        assert got["before"] in ("running", "failed") and got["after"] == "failed" and got["error"] == "actor_died", got
        assert got["fork_status"] == "completed" and "ALPHA-7" in got["fork_answer"]  # the scripted answer (the default agent is not grounded: no quoted source appended)
