"""A client in a process of its own, as a user's would be: joins the cluster at ADDRESS
(settings from the environment: CHORUS_STORE_URL, CHORUS_LLM_BASE_URL, CHORUS_PLACEMENT...),
submits N runs of the scripted slow reader over ROOT, and talks to the test in JSON lines:

    {"placed": {run_id: node_id}, "client_node": id, "nodes": {id: node manager port}}
                                                            once enough agents are mid-run
    (waits for a line on stdin: the test has done its damage, e.g. killed a node)
    {"results": {run_id: status}, "actors": {run_id: {"node": id, "restarts": n, "state": {...}, "version": v}}}

    python -m tests.cluster.client_runs ADDRESS N ROOT MIDRUN [AFTER]

AFTER more runs are submitted after the go-ahead. With CHORUS_TEST_NODE_IP the client's
driver joins through the raylet of the node at that address instead of the head's.
"""

from __future__ import annotations

import json
import os
import sys
import time

MARK = "@@chorus "  # what starts each line meant for the test


def actor_table() -> dict[str, dict]:
    """Name → node and restarts, from the GCS actor table (no dashboard needed)."""
    from ray._private import state

    table: dict[str, dict] = {}
    for info in state.actors().values():
        name = info.get("Name") or ""
        if info.get("State") == "ALIVE" or name not in table:
            table[name] = {
                "node": (info.get("Address") or {}).get("NodeID"),
                "restarts": int(info.get("NumRestarts", 0)),
                "state": info.get("State"),
                "actor_id": info.get("ActorID"),
            }
            if info.get("State") == "DEAD":  # why, in Ray's words (for a failing test's message)
                table[name]["death"] = " ".join(str(info.get("DeathCause") or "").split())[:1500]
    return table


def main() -> None:
    address, n, root, midrun = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    after = int(sys.argv[5]) if len(sys.argv) > 5 else 0  # runs submitted after the go-ahead
    import ray

    from actors import Client
    from actors.agent.actor import agent_stream

    def say(payload: dict) -> None:
        print(MARK + json.dumps(payload), flush=True)  # Ray prints warnings here too

    node_ip = os.environ.get("CHORUS_TEST_NODE_IP")
    if node_ip:  # this client's driver on the node at that address (by default: the head's)
        ray.init(address=address, namespace="chorus", _node_ip_address=node_ip, log_to_driver=False)
    with Client(address=address) as c:
        runs = [c.submit(f"Read the notes, pass {i}", root=root, max_iterations=12) for i in range(n)]
        store = c.store
        # Mid-run: at least MIDRUN agents have taken a few steps and none has finished.
        deadline = time.monotonic() + 240
        while True:
            versions = [store.stream_version(agent_stream(r.run_id)) for r in runs]
            if sum(v >= 4 for v in versions) >= midrun:
                break
            if time.monotonic() > deadline:
                sys.exit(f"client_runs: only {sum(v >= 4 for v in versions)} runs got going: {versions}")
            time.sleep(0.1)
        table = actor_table()
        say({
            "placed": {r.run_id: table.get(agent_stream(r.run_id), {}).get("node") for r in runs},
            "versions": {r.run_id: v for r, v in zip(runs, versions, strict=True)},
            "client_node": ray.get_runtime_context().get_node_id(),
            "nodes": {n["NodeID"]: n["NodeManagerPort"] for n in ray.nodes()},
        })  # fmt: skip
        sys.stdin.readline()  # the test's go-ahead
        runs += [c.submit(f"Read the notes, late pass {i}", root=root, max_iterations=12) for i in range(after)]
        # As each run ends: its result, its agent's state and node, then the agent is let go
        # (a finished run's actor would otherwise live as long as this client, holding its
        # placement and its store connections).
        # Asked without blocking: an agent whose node was lost answers only once it has
        # restarted, which may wait for a place another finished agent still holds.
        results: dict[str, str] = {}
        actors: dict[str, dict] = {}
        errors: dict[str, str] = {}
        running = {r._ref: r for r in runs}
        asking: dict = {}  # state ref -> run
        deadline = time.monotonic() + 600
        while running or asking:
            if time.monotonic() > deadline:
                sys.exit(f"client_runs: {len(running)} runs running, {len(asking)} agents silent after 600 s")
            done, _ = ray.wait(list(running), num_returns=len(running), timeout=0.2) if running else ([], [])
            for ref in done:
                r = running.pop(ref)
                result = r.wait(timeout=60)
                results[r.run_id] = result.status
                if result.error is not None:
                    errors[r.run_id] = f"{result.error.type}/{result.error.reason}: {result.error.message}"
                asking[r._actor.state.remote()] = r
            answered, _ = ray.wait(list(asking), num_returns=len(asking), timeout=0.2) if asking else ([], [])
            for ref in answered:
                r = asking.pop(ref)
                try:
                    answer = ray.get(ref)
                except Exception as e:  # noqa: BLE001 - an agent dead for good: say so, do not crash
                    answer = {"unreachable": f"{type(e).__name__}: {' '.join(str(e).split())[:1500]}"}
                actors[r.run_id] = {**actor_table().get(agent_stream(r.run_id), {}), **answer}
                ray.kill(r._actor, no_restart=True)
        say({"results": results, "actors": actors, "errors": errors})


if __name__ == "__main__":
    main()
