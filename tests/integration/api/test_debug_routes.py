"""The debugging page's routes (actors/api/debug_routes.py), in-process, no Ray: a run as a
fixture download (admin when it holds admin-only records), each event's line from its kind's
`describe`, two runs side by side as data; and the scopes of the actions the page offers
(a read token may not fork, cancel, resume or signal). Forks with an edit (completion or
prompt, actors.agent.fork_edit) are written here and served in-process with the scripted
model, then replayed and compared."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from actors.agent.actor import agent_stream
from actors.agent.fork_edit import EditedFork, prepare_edited_fork
from actors.api.app import create_app
from actors.runtime.client import Client
from actors.runtime.llm.gateway import LlmGateway
from actors.runtime.perform import LiveEffects, drive, local_invoker
from actors.runtime.replay import diff_runs, load_fixture, replay_run
from actors.runtime.replay.compare import compare_runs, message_diff, state_diff
from actors.runtime.run import Complete, RunLifecycle, Start, run_stream
from actors.runtime.settings import Settings
from actors.runtime.shell import ActorShell
from actors.testing.model import ScriptedProvider
from actors.tools.files import ReadFile, SearchFiles
from events.store import EventStore
from tests.support import fake_llm
from tests.support.recording import record_run

from .conftest import BEARER, TOKENS

LIGHTHOUSE = Path(__file__).resolve().parents[3] / "actors" / "simulation" / "packs" / "lighthouse.yaml"


@pytest.fixture(scope="module")
def http(tmp_path_factory):
    from actors.simulation.client import simulate
    from actors.testing.simulation import scripted_mind, scripted_synths

    base = tmp_path_factory.mktemp("debug-routes")
    settings = Settings.from_env(data_dir=base, store_url=f"sqlite:///{base / 'c.db'}", llm_base_url="http://127.0.0.1:9/v1")
    client = Client(settings=settings, start_ray=False, llm=ScriptedProvider(fake_llm.search_read_answer))
    (base / "repo").mkdir()
    record_run(client.store, base / "repo", run_id="ra")
    record_run(client.store, base / "repo", script=fake_llm.repeater, run_id="rb")
    simulate(client, LIGHTHOUSE, run_id="sim", ray=False, llm=scripted_synths(scripted_mind)).step(1)
    time.sleep(0.05)  # the forks below begin measurably after their origin's copied events
    requests = [r.position for r in client.store.read_all(run_id="ra") if r.event.type_name == "LlmRequested"]
    # call 1's prompt edited: the user message now says it is step 2, so the scripted model
    # (it answers by the "Step N of M" line) reads the file at once instead of searching
    serve_here(client.store, prepare_edited_fork(client, "ra", requests[0], prompt=PROMPT_EDIT, edited_by="ana", new_id="fp"), base / "repo")
    # call 2's completion edited: it answers at once
    answer = json.dumps({"thought": "I know it.", "action": "answer", "args": {"answer": "ALPHA-7", **fake_llm.QUOTE}})
    serve_here(client.store, prepare_edited_fork(client, "ra", requests[1], completion=answer, edited_by="bo", new_id="fc"), base / "repo")
    with TestClient(create_app(client=client, tokens=TOKENS)) as h:
        h.store = client.store
        yield h
    client.close()


PROMPT_EDIT = "Goal: What is the marker? It is in notes.txt.\n\nStep 2 of 10. Reply with the next step as one JSON object."


def serve_here(store: EventStore, fork: EditedFork, root: Path) -> None:
    """Serve a fork in this process, as its Ray actor would (AgentActor.serve), with the
    scripted model."""
    run = ActorShell(RunLifecycle(), run_stream(fork.run_id), store, run_id=fork.run_id).load()
    agent = ActorShell(fork.kind.agent_class()(), agent_stream(fork.run_id), store, run_id=fork.run_id).load()
    agent.handle(fork.start, causation_id=run.last_event_id)
    run.handle(Start(key="start", lead_stream=agent.stream_id), causation_id=agent.last_event_id)
    tools = {"search_files": SearchFiles(root=str(root)), "read_file": ReadFile(root=str(root))}
    state = drive(agent, LiveEffects(LlmGateway(ScriptedProvider(fake_llm.search_read_answer)), local_invoker(tools)))
    assert state.status == "completed", state.error
    run.handle(Complete(key="finish", result=state.answer), causation_id=agent.last_event_id)


def test_the_fixture_download_loads_and_is_admin_only_for_a_run_with_admin_only_records(http, tmp_path):
    got = http.get("/v1/runs/ra/fixture", headers=BEARER["read"])
    assert got.status_code == 200
    assert got.headers["content-disposition"] == 'attachment; filename="ra.jsonl"'
    (tmp_path / "ra.jsonl").write_text(got.text)
    loaded, run_id = load_fixture(tmp_path / "ra.jsonl")  # sealed: an edited line would not load
    assert run_id == "ra"
    assert [r.event.event_id for r in loaded.read_all(run_id="ra")] == [r.event.event_id for r in http.store.read_all(run_id="ra")]
    assert replay_run(loaded, "ra").ok
    assert http.get("/v1/runs/ra/fixture").status_code == 401
    assert http.get("/v1/runs/nosuch/fixture", headers=BEARER["read"]).status_code == 404
    # a simulation's synths think in admin-only records: below admin, no export
    refused = http.get("/v1/runs/sim/fixture", headers=BEARER["operate"])
    assert refused.status_code == 403 and "admin" in refused.json()["detail"]
    assert http.get("/v1/runs/sim/fixture", headers=BEARER["admin"]).status_code == 200


def test_labels_are_the_kinds_own_lines(http):
    out = http.get("/v1/runs/rb/labels", headers=BEARER["read"]).json()
    records = list(http.store.read_all(run_id="rb"))
    assert [l["position"] for l in out["labels"]] == [r.position for r in records]
    assert out["labels"][0]["label"] == "submitted: What is the marker?"
    rejected = [l for l, r in zip(out["labels"], records, strict=True) if r.event.type_name == "StepRejected"]
    assert rejected and all(l["error"] for l in rejected)
    # a synth's thoughts are admin-only: below admin its line is only the type
    sim = http.get("/v1/runs/sim/labels", headers=BEARER["read"]).json()["labels"]
    full = http.get("/v1/runs/sim/labels", headers=BEARER["admin"]).json()["labels"]
    kinds = {r.position: r.event.type_name for r in http.store.read_all(run_id="sim")}
    cognized = [i for i, l in enumerate(sim) if kinds[l["position"]] == "SynthCognized"]
    assert cognized and all(sim[i]["label"] == "SynthCognized" for i in cognized)
    assert any(full[i]["label"] != "SynthCognized" for i in cognized)


def test_compare_is_the_diff_as_data_with_the_state_and_prompt_at_the_parting(http):
    c = http.get("/v1/compare", params={"a": "ra", "b": "rb"}, headers=BEARER["read"]).json()
    d = diff_runs(http.store, "ra", "rb")  # what `chorus diff` prints
    assert c["shared"] == d.shared and not c["identical"]
    assert (c["first_a"]["type"], c["first_a"]["version"]) == (d.first_a.type_name, d.first_a.version)
    assert (c["first_b"]["type"], c["first_b"]["version"]) == (d.first_b.type_name, d.first_b.version)
    parting = next(r for r in c["rows"] if not r["same"])
    assert parting["index"] == d.shared and all(r["same"] for r in c["rows"] if r["index"] < d.shared)
    # the first call's completions differ (search, then answer; search, try 1): same prompt
    assert d.first_a.type_name == "LlmCompleted"
    assert c["prompt_a"]["data"]["messages"] == c["prompt_b"]["data"]["messages"]
    assert {m["status"] for m in c["prompt_diff"]} == {"same"}
    # the state once each side's first differing event is applied
    assert c["state_diff"], "the two completions leave the agents in different states"
    for change in c["state_diff"]:
        assert change["a"] != change["b"]
    positions = {r.event.event_id: r.position for r in http.store.read_all(run_id="ra")}
    assert c["first_a"]["position"] == positions[d.first_a.event_id]
    same = http.get("/v1/compare", params={"a": "ra", "b": "ra"}, headers=BEARER["read"]).json()
    assert same["identical"] and same["first_a"] is None and same["state_diff"] == []


def test_compare_refuses_bad_input(http):
    assert http.get("/v1/compare", params={"a": "ra", "b": "nosuch"}, headers=BEARER["read"]).status_code == 404
    assert http.get("/v1/compare", params={"a": "ra", "b": "../x"}, headers=BEARER["read"]).status_code == 422
    assert http.get("/v1/compare", params={"a": "ra", "b": "rb", "after": 10_000}, headers=BEARER["read"]).status_code == 422
    assert http.get("/v1/compare", params={"a": "ra", "b": "sim"}, headers=BEARER["read"]).status_code == 400  # two kinds
    assert http.get("/v1/compare", params={"a": "ra", "b": "rb"}).status_code == 401


def test_a_read_token_may_look_but_not_act(http):
    """The page's buttons call these routes; below operate each is a 403 and nothing is written."""
    before = sum(1 for _ in http.store.read_all())
    for path, body in (
        ("/v1/runs/ra/fork", {"at": 5, "model": "m2"}),
        ("/v1/runs/ra/cancel", {"reason": "no"}),
        ("/v1/runs/ra/resume", None),
        ("/v1/runs/ra/signals/approval", {"payload": True}),
    ):
        got = http.post(path, json=body, headers=BEARER["read"])
        assert got.status_code == 403, (path, got.text)
    assert http.get("/v1/runs/ra/replay", headers=BEARER["read"]).json()["ok"] is True
    assert sum(1 for _ in http.store.read_all()) == before


def test_fork_with_an_edit_is_operate_and_bounded(http):
    """What the route refuses before anything runs (the fork itself continues on Ray: the
    browser test makes one and replays it)."""
    calls = [r.position for r in http.store.read_all(run_id="ra") if r.event.type_name == "LlmCompleted"]
    other = next(r.position for r in http.store.read_all(run_id="ra") if r.event.type_name == "StepDecided")
    before = sum(1 for _ in http.store.read_all())
    path = "/v1/runs/ra/fork-edit"
    assert http.post(path, json={"at": calls[0], "completion": "x"}, headers=BEARER["read"]).status_code == 403
    assert http.post(path, json={"at": calls[0], "completion": "x"}).status_code == 401
    too_long = http.post(path, json={"at": calls[0], "completion": "x" * 100_001}, headers=BEARER["operate"])
    assert too_long.status_code == 422
    assert http.post(path, json={"at": calls[0], "completion": ""}, headers=BEARER["operate"]).status_code == 422
    assert http.post(path, json={"at": 0, "completion": "x"}, headers=BEARER["operate"]).status_code == 422
    assert http.post(path, json={"at": calls[0], "completion": "x", "by": "me"}, headers=BEARER["operate"]).status_code == 422
    not_a_call = http.post(path, json={"at": other, "completion": "x"}, headers=BEARER["operate"])
    assert not_a_call.status_code == 400 and "not an LLM call" in not_a_call.json()["detail"]
    assert http.post(path, json={"at": 10**9, "completion": "x"}, headers=BEARER["operate"]).status_code == 400
    assert http.post("/v1/runs/nosuch/fork-edit", json={"at": 1, "completion": "x"}, headers=BEARER["operate"]).status_code == 404
    sim = http.post("/v1/runs/sim/fork-edit", json={"at": 1, "completion": "x"}, headers=BEARER["operate"])
    assert sim.status_code == 400 and "not an agent run" in sim.json()["detail"]
    assert sum(1 for _ in http.store.read_all()) == before  # nothing written


def test_message_and_state_diffs():
    old = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    new = [{"role": "system", "content": "s"}, {"role": "user", "content": "u2"}, {"role": "assistant", "content": "a"}]
    assert [m["status"] for m in message_diff(old, new)] == ["same", "changed", "added"]
    assert [m["status"] for m in message_diff(new, old)] == ["same", "changed", "removed"]
    assert state_diff({"a": 1, "b": {"c": [1, 2]}}, {"a": 1, "b": {"c": [1, 3]}, "d": 0}) == [
        {"path": "b.c[1]", "a": 2, "b": 3, "only": None},
        {"path": "d", "a": None, "b": 0, "only": "b"},
    ]


def _events(store, run_id: str, type_name: str | None = None):
    return [r.event for r in store.read_all(run_id=run_id) if type_name is None or r.event.type_name == type_name]


def test_a_fork_with_an_edited_prompt_sends_it_live_records_who_and_replays_exact(http):
    store = http.store
    origin = _events(store, "ra", "LlmRequested")[0]
    [edit] = _events(store, "fp", "PromptEdited")
    assert (edit.stream_id, edit.origin_run, edit.call_index, edit.edited_by) == ("agent:fp", "ra", 1, "ana")
    assert edit.original == origin.messages  # what the model had been sent
    assert edit.edited[:-1] == origin.messages[:-1] and edit.edited[-1] == {"role": "user", "content": PROMPT_EDIT}
    agent = _events(store, "fp")
    types = [e.type_name for e in agent if e.stream_id == "agent:fp"]
    assert types[types.index("AgentForked") + 1] == "PromptEdited"  # on the agent's stream, after the mark
    # the edited call went to the model with the person's messages, and its answer led
    asked = _events(store, "fp", "LlmRequested")[0]
    assert asked.call_index == 1 and asked.messages == edit.edited
    steps = _events(store, "fp", "StepDecided")
    assert steps[0].action == "read_file"  # the origin searched first
    assert _events(store, "ra", "StepDecided")[0].action == "search_files"
    # the calls after it are the agent's own prompts again
    assert "Step 2 of 10" in _events(store, "fp", "LlmRequested")[1].messages[-1]["content"]
    labels = {l["position"]: l["label"] for l in http.get("/v1/runs/fp/labels", headers=BEARER["read"]).json()["labels"]}
    at = next(r.position for r in store.read_all(run_id="fp") if r.event.type_name == "PromptEdited")
    assert labels[at].startswith("LLM call 1's prompt edited by ana, sent live (user: Goal: What is the marker? It is in notes.txt.")
    report = replay_run(store, "fp")
    assert report.ok, report.divergence and report.divergence.describe()
    assert report.llm_calls == len(_events(store, "fp", "LlmCompleted"))  # each served from the log: no live call

    # the replay checks the edit: a log whose recorded prompt differs from the edit diverges
    tampered = EventStore("memory://")
    for e in agent:
        if e.type_name == "PromptEdited":
            e = type(e).model_validate({**e.model_dump(), "edited": [*e.edited[:-1], {"role": "user", "content": "Step 3 of 10."}]})
        tampered.append(e.stream_id, [e], e.version - 1)
    bad = replay_run(tampered, "fp")
    assert not bad.ok and bad.divergence.version == types.index("PromptEdited") + 2  # the edited call's request


def test_a_forks_replay_counts_only_its_own_calls_and_time(http):
    """Bug: the copied prefix's calls and timestamps (the origin's) counted as the fork's."""
    store = http.store
    agent = [e for e in _events(store, "fc") if e.stream_id == "agent:fc"]
    mark = next(i for i, e in enumerate(agent) if e.type_name == "AgentForked")
    own = agent[mark + 1 :]
    assert any(e.type_name == "LlmCompleted" for e in agent[:mark])  # call 1 was copied
    labels = {l["position"]: l["label"] for l in http.get("/v1/runs/fc/labels", headers=BEARER["read"]).json()["labels"]}
    edited = next(r.position for r in store.read_all(run_id="fc") if r.event.type_name == "CompletionEdited")
    assert labels[edited].startswith("LLM call 2's completion edited by bo: {")
    report = replay_run(store, "fc")
    assert report.ok, report.divergence and report.divergence.describe()
    assert report.llm_calls == sum(e.type_name == "LlmCompleted" for e in own) == 1  # the edited call 2 only
    assert report.events == len(own)
    assert report.original_s == pytest.approx((agent[-1].timestamp - agent[mark].timestamp).total_seconds())
    assert report.original_s < (agent[-1].timestamp - agent[0].timestamp).total_seconds() - 0.04  # not from the origin's start
    # a run that is not a fork still counts from its first event
    ra = [e for e in _events(store, "ra") if e.stream_id == "agent:ra"]
    assert replay_run(store, "ra").original_s == pytest.approx((ra[-1].timestamp - ra[0].timestamp).total_seconds())


def test_side_by_side_lines_up_what_a_fork_did_after_its_mark(http):
    """Bug: after `AgentForked` every row paired the origin's event with the fork's one before."""
    c = http.get("/v1/compare", params={"a": "ra", "b": "fc"}, headers=BEARER["read"]).json()
    rows = c["rows"]
    parting = next(i for i, r in enumerate(rows) if not r["same"])
    assert rows[parting]["index"] == c["shared"] and rows[parting]["a"] is None and rows[parting]["b"]["type"] == "AgentForked"
    after = rows[parting + 1 :]
    # the origin's call 2 and the fork's: the same request, then the edited answer
    assert [(r["a"]["type"], r["b"]["type"], r["same"]) for r in after[:2]] == [
        ("LlmRequested", "LlmRequested", True), ("LlmCompleted", "LlmCompleted", False)
    ]
    assert after[0]["a"]["data"]["call_index"] == after[0]["b"]["data"]["call_index"] == 2
    assert after[1]["b"]["data"]["content"] != after[1]["a"]["data"]["content"]
    assert after[2]["a"]["type"] == "StepDecided" and after[2]["b"]["type"] == "AnswerGiven"
    # a prompt edit: both marks get a row of their own, the edited call lines up with the
    # origin's call 1, and the prompt diff shows the person's message
    p = compare_runs(http.store, "ra", "fp")
    marks = [(r["a"], r["b"].type_name) for r in p.rows if r["b"] is not None and r["b"].type_name in ("AgentForked", "PromptEdited")]
    assert marks == [(None, "AgentForked"), (None, "PromptEdited")]
    first_call = next(r for r in p.rows if r["b"] is not None and r["b"].type_name == "LlmRequested")
    assert first_call["a"].type_name == "LlmRequested" and first_call["a"].call_index == first_call["b"].call_index == 1
    out = http.get("/v1/compare", params={"a": "ra", "b": "fp"}, headers=BEARER["read"]).json()
    assert [m["status"] for m in out["prompt_diff"]] == ["same", "changed"]
    assert out["prompt_diff"][1]["b"] == PROMPT_EDIT
    # the other way round: the fork's marks on side a
    back = compare_runs(http.store, "fc", "ra")
    assert [(r["a"].type_name if r["a"] else None, r["b"].type_name if r["b"] else None) for r in back.rows if back.shared <= r["index"] < back.shared + 2] == [
        ("AgentForked", None), ("LlmRequested", "LlmRequested")
    ]


def test_fork_with_an_edited_prompt_refuses_bad_input(http):
    store = http.store
    call = next(r.position for r in store.read_all(run_id="ra") if r.event.type_name == "LlmRequested")
    before = sum(1 for _ in store.read_all())
    path, op = "/v1/runs/ra/fork-edit", BEARER["operate"]
    for body in (
        {"at": call},  # neither
        {"at": call, "completion": "x", "prompt": "y"},  # both
        {"at": call, "prompt": ""},
        {"at": call, "prompt": []},
        {"at": call, "prompt": [{"role": "wizard", "content": "x"}]},
        {"at": call, "prompt": [{"role": "user", "content": "x", "name": "y"}]},
        {"at": call, "prompt": "x" * 1_000_001},
    ):
        assert http.post(path, json=body, headers=op).status_code == 422, body
    assert http.post(path, json={"at": call, "prompt": "x"}, headers=BEARER["read"]).status_code == 403
    own = _events(store, "ra", "LlmRequested")[0].messages
    same = http.post(path, json={"at": call, "prompt": own}, headers=op)
    assert same.status_code == 400 and "own prompt" in same.json()["detail"]
    other = next(r.position for r in store.read_all(run_id="ra") if r.event.type_name == "StepDecided")
    assert http.post(path, json={"at": other, "prompt": "x"}, headers=op).status_code == 400
    assert sum(1 for _ in store.read_all()) == before  # nothing written
