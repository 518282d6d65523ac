"""A workload owns its event types (actors/<workload>/events.py; the ReAct agent the workloads
share, actors/agent/events.py): `events` registers only the shared ones, and a log naming a
workload's type still decodes before that workload was imported, because an unknown name loads
the plugins first (issue 39)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import events.registry as registry_module
from events.registry import UnknownEventType

ROOT = Path(__file__).resolve().parents[2]
WORKLOADS = ("actors.research", "actors.codeqa", "actors.tasks", "actors.simulation", "actors.relay", "actors.agent")


def test_the_shared_events_register_no_workload():
    probe = (
        "import json, sys, events, projections; "
        f"print(json.dumps([m for m in sys.modules if m.startswith({WORKLOADS!r})]))"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


@pytest.mark.parametrize(
    "fixture, first_type",
    [
        ("local_model_relay_two_items.jsonl", "RoadmapPlanned"),
        ("scripted_simulation_lighthouse.jsonl", "WorldCreated"),
        ("scripted_task_director_evaluator.jsonl", "WorkflowStarted"),
        ("local_model_research.jsonl", "ResearchRequested"),
        ("scripted_search_read_answer.jsonl", "AgentStarted"),
        ("local_model_grounded_base_class_question.jsonl", "StepDecided"),
    ],
)
def test_a_workloads_log_loads_from_python_before_the_workload_is_imported(fixture, first_type):
    probe = (
        "import json, sys; from pathlib import Path; "
        "from actors.runtime.replay import load_fixture; "
        f"before = {first_type!r} in __import__('events.registry').registry._TYPES; "
        f"store, run = load_fixture(Path('tests/fixtures/runs') / {fixture!r}); "
        "print(json.dumps([before, len(list(store.read_all(run_id=run)))]))"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    before, count = json.loads(done.stdout)
    assert before is False  # the workload's types were not registered by importing the runtime
    assert count > 0


def test_an_agent_log_decodes_in_a_fresh_process_through_its_upcasters():
    # AgentStarted recorded at schema v2 with `rules: 0` (a research run's loop): read before
    # the agent is imported, it is upcast to v4 with the patches that revision meant (none; no
    # lookups, so no definition_checks)
    probe = (
        "import json, sys; from pathlib import Path; "
        "from actors.runtime.replay import load_fixture; "
        "store, run = load_fixture(Path('tests/fixtures/runs/local_model_research.jsonl')); "
        "started = [r.event for r in store.read_all(run_id=run) if r.event.type_name == 'AgentStarted']; "
        "print(json.dumps([type(started[0]).__module__, started[0].schema_version, started[0].patches, "
        "'rules' in started[0].model_dump()]))"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == ["actors.agent.events", 4, [], False]


def test_an_unknown_name_calls_the_loaders_then_is_still_one_error(monkeypatch):
    calls: list[str] = []
    monkeypatch.setattr(registry_module, "_LOADERS", [lambda: calls.append("load")])
    with pytest.raises(UnknownEventType, match="CHORUS_PLUGINS"):
        registry_module.resolve("test.no.such.Type")
    assert calls == ["load"]


def test_a_loader_that_registers_the_type_resolves_it(monkeypatch):
    from events.base import Event

    class Probed(Event):
        pass

    types = dict(registry_module._TYPES)
    monkeypatch.setattr(registry_module, "_TYPES", types)
    monkeypatch.setattr(registry_module, "_LOADERS", [lambda: types.setdefault("test.probe.Probed", Probed)])
    assert registry_module.resolve("test.probe.Probed") is Probed


def test_a_restarted_ledger_reads_an_agent_stream_in_a_process_that_imported_only_the_runtime(tmp_path):
    # Ray restarts a run's LedgerActor in a worker that imported actors.runtime.budget alone; it
    # counts the run's calls from the lead's stream, which holds the agent's own event types
    url = f"sqlite:///{tmp_path / 'log.db'}"
    load = (
        "from pathlib import Path; from actors.runtime.replay import load_fixture; from events.store import EventStore; "
        f"store = EventStore({url!r}); load_fixture(Path('tests/fixtures/runs/scripted_search_read_answer.jsonl'), store); "
        "store.close()"
    )
    done = subprocess.run([sys.executable, "-c", load], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    count = (
        "import json, sys; from actors.runtime.budget import run_usage; from events.store import EventStore; "
        f"usage = run_usage(EventStore({url!r}), 'search_read_', streams=['agent:search_read_']); "
        "print(json.dumps([usage.calls, 'actors.agent.events' in sys.modules]))"
    )
    done = subprocess.run([sys.executable, "-c", count], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [3, True]  # its three model calls; the agent's types loaded with its plugin
