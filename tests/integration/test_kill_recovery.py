"""Crash recovery for every workload, on both databases (issue 16, part 3).

Runs of each workload (react agent, researcher, code-question orchestrator, task workflow) on
a real local Ray, against SQLite or PostgreSQL, with a scripted model served over HTTP
(tests/support/kill_recovery.py). While they run, their actors are killed with SIGKILL at
seeded random points: the lead, the tool actors it owns, the run's ledger actor. Afterwards:

- every run completed (not failed);
- no event is duplicated (event ids unique) and versions are contiguous in every stream;
- every actor's state equals the fold of its log (its final snapshot, and the live lead's);
- no recorded LLM call was made twice: the requests the endpoint served (counted over HTTP,
  so across processes) equal the `LlmRequested` events of the log, but for calls in flight
  at a kill (at most one per kill, each served again only after a kill);
- each run replays from its log.

Which database each workload runs on (BACKEND_OF): every workload once, the code-question
orchestrator on PostgreSQL and the other three on SQLite. What a kill can break is of two
kinds, and this covers both once, not eight times (each combination costs 40-100 s of a
2-core CI machine): what the workloads do (their actors, tool actors, ledger, journal,
replay), which does not depend on the database, so each workload runs once; and what the
store does when a process holding its connections dies mid-transaction (PostgreSQL's pool,
row locks and server-side transactions, SQLite's file locks), which each database gets on
at least one workload. PostgreSQL gets the orchestrator, the workload with the most
concurrent writers (its lead, tool actors that make LLM calls of their own, the ledger
actor). A run's actor killed mid-run is also recovered on both databases by
test_function_crash_recovery.py (a function agent, SQLite and PostgreSQL), and
`CHORUS_KILL_BACKENDS=both` runs every workload on both databases, as before (a change to
the store or to recovery wants it).

CHORUS_KILLS (default 24) is the number of kills per backend in that full matrix, spread over
the four workloads (6 per workload run); the issue's figure is 100 (`CHORUS_KILLS=100`).
CHORUS_KILL_SEED fixes the seed (printed on failure).
"""

from __future__ import annotations

import os
import random
import time
from collections import Counter
from typing import Any

import pytest

from actors import Client
from actors.codeqa.orchestrator import TOOLS
from actors.runtime.registry import Registry
from actors.runtime.replay import replay_run
from actors.runtime.run import RunLifecycle, run_stream
from actors.runtime.settings import Settings
from actors.runtime.shell import ShellSnapshot, rebuild
from events.runs import Budget
from tests.support import codeqa_llm, fake_llm, fake_research
from tests.support.kill_recovery import MINDS, CountingEndpoint, Killer, request_key
from tests.support.task_scripts import EXAMPLE

pytestmark = pytest.mark.ray

WORKLOADS = ("react", "researcher", "orchestrator", "task")
# The database each workload runs on; CHORUS_KILL_BACKENDS=both: every workload on both.
BACKEND_OF = {"react": "sqlite", "researcher": "sqlite", "orchestrator": "postgres", "task": "sqlite"}
BOTH = os.environ.get("CHORUS_KILL_BACKENDS", "").strip().lower() == "both"
COMBINATIONS = [
    (backend, workload)
    for backend in ("sqlite", "postgres")
    for workload in WORKLOADS
    if BOTH or BACKEND_OF[workload] == backend
]
KILLS = int(os.environ.get("CHORUS_KILLS", "24"))
KILLS_PER_RUN = 3
DELAY_S = 0.15  # the endpoint's time per call: a kill often lands while a call is in flight
IN_TRANSIT_S = 1.0  # how long before the endpoint read a request it may have been sent


def kills_for(workload: str) -> int:
    """This workload's share of the backend's KILLS."""
    i = WORKLOADS.index(workload)
    return KILLS // len(WORKLOADS) + (1 if i < KILLS % len(WORKLOADS) else 0)


@pytest.fixture
def seed() -> int:
    return int(os.environ.get("CHORUS_KILL_SEED") or random.SystemRandom().randrange(1 << 30))


def submit(c: Client, workload: str, i: int, where: dict[str, Any]) -> Any:
    budget = Budget(max_llm_calls=1000)  # a limit, so agent runs have a ledger actor to kill
    if workload == "react":
        return c.submit(f"Read the notes line by line, pass {i}", root=where["notes"], max_iterations=12, budget=budget)
    if workload == "researcher":
        return c.submit(f"Where are payments recorded? Pass {i}.", kind="researcher", repo=str(where["repo"]), budget=budget)
    if workload == "orchestrator":
        return c.submit(
            f"How is a discount code applied? Pass {i}.", root=where["repos"], kind="orchestrator",
            tools=list(TOOLS), budget=budget,
        )  # fmt: skip
    # A tool call first (a script: at-least-once, so run again if a kill cuts it off), then
    # the director-evaluator loop.
    workflow = f'(bind lines (system:run_script "sleep 0.2; wc -l < notes.txt"))\n{EXAMPLE.read_text()}'
    return c.submit(
        workflow, kind="task", workspace=where["notes"], budget=budget,
        params={"goal": f"a haiku, pass {i}", "max_rounds": "6"},
    )  # fmt: skip


def ended(handle: Any) -> Any:
    """Has the run's `serve` call returned?"""
    import ray

    return lambda: bool(ray.wait([handle._ref], timeout=0)[0])


def lead_of(c: Client, run_id: str) -> str:
    return c.run_state(run_id).lead_stream or ""


def check_run(c: Client, handle: Any, workload: str, why: str) -> list[Any]:
    """The run's invariants; returns its LlmRequested events."""
    run_id = handle.run_id
    result = handle.result
    assert result.status == "completed", f"{why}: run {run_id} ended {result.status}: {result.error}"
    records = list(c.store.read_all(run_id=run_id))
    ids = [r.event.event_id for r in records]
    assert len(ids) == len(set(ids)), f"{why}: run {run_id} has duplicated events"
    streams: dict[str, list[Any]] = {}
    for r in records:
        streams.setdefault(r.event.stream_id, []).append(r.event)
    kind = Registry.run_kind(c.run_state(run_id).kind)
    for stream_id, events in streams.items():
        versions = [e.version for e in events]
        assert versions == list(range(1, len(events) + 1)), f"{why}: {stream_id} versions {versions}"
        behaviour = RunLifecycle() if stream_id == run_stream(run_id) else kind.reading.behaviour(stream_id, events[0])
        if behaviour is None:  # a tool's own calls: no state, but each call once, even after a re-run
            indexes = [e.call_index for e in events if e.type_name == "LlmRequested"]
            assert indexes == list(range(1, len(indexes) + 1)), f"{why}: {stream_id} calls {indexes}"
            hashes = Counter(e.request_hash for e in events if e.type_name == "LlmRequested")
            assert max(hashes.values(), default=1) == 1, f"{why}: {stream_id} made a call twice"
            continue
        folded = rebuild(behaviour, events)
        snap = c.store.load_snapshot(stream_id)
        assert snap is not None and snap.version == len(events), f"{why}: {stream_id} has no final snapshot"
        body = ShellSnapshot.model_validate(snap.data)
        assert type(folded).model_validate(body.state) == folded, f"{why}: {stream_id} snapshot is not the fold of its log"
    lead = lead_of(c, run_id)
    if workload != "task":  # the live lead's state too (the task actor has no state query)
        import ray

        summary = ray.get(handle._actor.state.remote(), timeout=60)
        folded = rebuild(kind.reading.behaviour(lead, streams[lead][0]), streams[lead])
        assert summary["version"] == len(streams[lead]), f"{why}: the lead of {run_id} is not at its log's end"
        assert summary["state"] == folded.model_dump(mode="json"), f"{why}: the lead of {run_id} is not its log's fold"
    requested = [r.event for r in records if r.event.type_name == "LlmRequested"]
    completed = c.store.read_stream(run_stream(run_id))[-1]
    assert completed.type_name == "RunCompleted" and completed.llm_calls == len(requested), (
        f"{why}: RunCompleted of {run_id} counts {getattr(completed, 'llm_calls', None)} calls, its log {len(requested)}"
    )
    report = replay_run(c.store, run_id)
    assert report.ok, f"{why}: replay of {run_id}: {report.divergence and report.divergence.describe()}"
    return requested


@pytest.mark.parametrize(("backend", "workload"), COMBINATIONS)
def test_killed_actors_recover_without_loss_duplication_or_repeated_calls(request, ray_local, tmp_path, backend, workload, seed):
    url = request.getfixturevalue(f"{backend}_url")
    wanted = kills_for(workload)
    why = f"seed {seed} (CHORUS_KILL_SEED={seed} to repeat), {backend}, {workload}"
    print(why)
    rng = random.Random(f"{seed}:{backend}:{workload}")
    where = {
        "notes": tmp_path / "notes",
        "repo": fake_research.make_repo(tmp_path / "repo"),
        "repos": codeqa_llm.make_repos(tmp_path / "repos"),
    }
    where["notes"].mkdir()
    fake_llm.make_repo(where["notes"])
    endpoint = CountingEndpoint(MINDS[workload], delay_s=DELAY_S)
    with endpoint.serving():
        settings = Settings.from_env(
            data_dir=tmp_path / "data", store_url=url, llm_base_url=endpoint.url, llm_structured="json_object",
            embedder="openai", embeddings_base_url=endpoint.url,
        )  # fmt: skip
        with Client(settings=settings) as c:
            killer = Killer(rng, c.store)
            runs, requested = 0, []
            while len(killer.kills) < wanted:
                assert runs <= 4 * wanted + 4, f"{why}: runs keep ending before their kills"
                handle = submit(c, workload, runs, where)
                runs += 1
                try:
                    deadline = time.monotonic() + 60
                    while not lead_of(c, handle.run_id) and time.monotonic() < deadline:
                        time.sleep(0.05)
                    todo = min(KILLS_PER_RUN, wanted - len(killer.kills))
                    killer.kill_during(handle.run_id, lead_of(c, handle.run_id), todo, ended(handle))
                    handle.wait(timeout=300)
                    requested += check_run(c, handle, workload, why)
                finally:  # a finished run's lead (and its tools, its store connections) lives on: let it go
                    ray_local.kill(handle._actor, no_restart=True)
    kills = killer.kills
    served = endpoint.counts()
    logged = Counter(request_key(e.messages) for e in requested)
    unserved = {k: n for k, n in logged.items() if served[k] < n}
    assert not unserved, f"{why}: the log records {sum(unserved.values())} calls the endpoint never served"
    again = {k: served[k] - logged[k] for k in served if served[k] > logged[k]}
    assert sum(again.values()) <= len(kills), f"{why}: {sum(again.values())} calls made again after {len(kills)} kills"
    for key in again:
        times = endpoint.times(key)
        # A kill in flight: after the request was sent (the endpoint may read it a moment after
        # the kill, which cuts the caller, not the socket), before it was sent again.
        assert any(times[0] - IN_TRANSIT_S < k.time < times[-1] for k in kills), (
            f"{why}: a call was made twice with no kill between: served at {times}, logged {logged[key]}, "
            f"kills at {[(k.time, k.target, k.run_id) for k in kills]}: {key[-300:]}"
        )
    print(
        f"{backend} {workload}: {runs} runs, {len(kills)} kills "
        f"({dict(Counter(k.target for k in kills))}), {sum(served.values())} calls served, "
        f"{len(requested)} recorded, {sum(again.values())} in flight at a kill made again"
    )
