"""A run names its kind in `kind` (RunSubmitted v3): old logs, whose RunSubmitted called it
`agent`, load through the upcaster; `Client.submit(kind=...)` picks the kind, `agent=` an
agent function, and both at once is one clear error with nothing written."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone

import pytest

from actors.runtime.client import Client
from actors.runtime.registry import RegistryError
from actors.runtime.run import RunLifecycle, RunState, Submit
from actors.runtime.runkind import FUNCTION_KIND, kind_of_submission
from actors.runtime.settings import Settings
from events.codec import decode_event, packb
from events.runs import RunSubmitted, kind_named


def stored(version: int, payload: dict) -> bytes:
    return packb([version, uuid.uuid4(), "old", None, "submit", datetime(2026, 1, 2, tzinfo=timezone.utc), payload])


def is_function(agent: object) -> bool:
    return callable(agent) or (isinstance(agent, str) and ":" in agent)


# -- the event ------------------------------------------------------------------------------


def test_a_v2_run_submitted_names_its_kind_in_kind():
    event = decode_event("RunSubmitted", "run:old", 1, stored(2, {"goal": "g", "agent": "researcher", "params": {}}))
    assert isinstance(event, RunSubmitted)
    assert event.kind == "researcher" and "agent" not in event.payload()


def test_a_v1_run_submitted_goes_through_both_upcasters():
    event = decode_event("RunSubmitted", "run:old", 1, stored(1, {"goal": "g", "agent": "task", "budget": {}}))
    assert (event.kind, event.budget.max_llm_calls) == ("task", None)  # renamed, and unlimited as it ran


def test_an_old_payload_that_left_the_kind_out_is_the_default():
    event = decode_event("RunSubmitted", "run:old", 1, stored(2, {"goal": "g"}))
    assert event.kind == "react"


def test_the_rename_is_a_pure_function_of_the_payload():
    old = {"goal": "g", "agent": "relay"}
    assert kind_named(old) == {"goal": "g", "kind": "relay"}
    assert old == {"goal": "g", "agent": "relay"}  # not changed in place
    assert kind_named({"goal": "g"}) == {"goal": "g"}


def test_a_run_state_snapshotted_before_the_rename_loads():
    state = RunState.model_validate({"status": "running", "goal": "g", "agent": "react"})
    assert state.kind == "react"
    assert RunState.model_validate({"kind": "task"}).kind == "task"


def test_the_lifecycle_records_the_kind():
    (event,) = RunLifecycle().decide(RunState(), Submit(key="submit", goal="g", kind="task"))
    assert event.kind == "task"
    assert RunLifecycle().evolve(RunState(), event).kind == "task"
    (default,) = RunLifecycle().decide(RunState(), Submit(key="submit", goal="g"))
    assert default.kind == "react"


# -- what Client.submit runs ----------------------------------------------------------------


def test_kind_names_the_kind_and_agent_a_function():
    assert kind_of_submission("task", None, is_function=is_function) == ("task", None)
    assert kind_of_submission(None, None, is_function=is_function) == (None, None)
    assert kind_of_submission(None, "pkg.mod:fn", is_function=is_function) == (FUNCTION_KIND, "pkg.mod:fn")
    assert kind_of_submission(None, len, is_function=is_function) == (FUNCTION_KIND, len)


def test_both_kind_and_agent_is_one_line():
    with pytest.raises(ValueError, match="not both") as e:
        kind_of_submission("task", "pkg.mod:fn", is_function=is_function)
    assert "\n" not in str(e.value)


def test_a_function_as_kind_is_pointed_to_agent():
    with pytest.raises(ValueError, match="as agent="):
        kind_of_submission(len, None, is_function=is_function)


def test_a_kind_by_agent_is_deprecated_but_runs():
    with pytest.warns(DeprecationWarning, match="write kind='researcher'"):
        assert kind_of_submission(None, "researcher", is_function=is_function) == ("researcher", None)


def test_agent_of_another_type_is_refused():
    with pytest.raises(ValueError, match="agent= takes an @agent function"):
        kind_of_submission(None, 42, is_function=is_function)


@pytest.fixture
def client(tmp_path):
    settings = Settings.from_env(data_dir=tmp_path / "data", store_url=f"sqlite:///{tmp_path / 'c.db'}")
    with Client(settings=settings, start_ray=False) as c:
        yield c


def test_submit_refuses_both_before_writing(client):
    with pytest.raises(ValueError, match="not both"):
        client.submit("a goal", kind="react", agent="pkg.mod:fn")
    assert client.store.max_position() == 0


def test_submit_refuses_an_unknown_kind_before_writing(client):
    with pytest.raises(RegistryError, match="no run kind registered as 'nope'"):
        client.submit("a goal", kind="nope")
    with pytest.warns(DeprecationWarning), pytest.raises(RegistryError, match="'nope'"):
        client.submit("a goal", agent="nope")
    assert client.store.max_position() == 0


def test_begin_run_records_the_kind(client):
    client.begin_run("r1", goal="g", kind="task", params={})
    assert client.run_state("r1").kind == "task"
    assert [r["kind"] for r in client.runs()] == ["task"]
