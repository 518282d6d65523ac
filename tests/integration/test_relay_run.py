"""The relay (seed 004) end to end on a real SQLite file, with scripted models and the real
verifier (ruff and pytest in the sandbox on a scratch workspace): retries that carry the
defect capsule, escalation, replay with zero live calls, and the workspace rebuilt from the
log equal to the git mirror at every checkpoint."""

from __future__ import annotations

import json

import pytest

from actors.relay import prompts
from actors.relay.builder import Builder
from actors.relay.git_workspace import GitWorkspace
from actors.relay.recording import (
    RecordedEffects,
    builder_stream,
    scheduler_stream,
    verifier_stream,
)
from actors.relay.replay import replay_relay
from actors.relay.roadmap import RoadmapItem
from actors.relay.run import drive_relay, git_mirror, plan_relay
from actors.relay.scheduler import SchedulerBehaviour
from actors.relay.verifier import Verifier
from actors.relay.workspace import workspace_at
from actors.runtime.llm.gateway import LlmGateway
from actors.testing.model import ScriptedProvider
from actors.runtime.perform import LiveEffects
from actors.runtime.shell import ActorShell
from events.effects import LlmRequested
from actors.relay.events import (
    CheckpointStored,
    EscalationRaised,
    RoadmapCompleted,
    TurnVerified,
)
from events.store import EventStore

TEST = "from calc import {fn}\n\n\ndef test_{fn}():\n    assert {fn}(2, 3) == {want}\n"


def reply(fn: str, body: str, want: int) -> str:
    return (
        f"I wrote {fn} and its test.\n\n"
        f"File: calc_{fn}.py\n```python\ndef {fn}(a, b):\n    return {body}\n```\n\n"
        f"File: test_{fn}.py\n```python\n{TEST.format(fn=fn, want=want).replace('from calc ', f'from calc_{fn} ')}```\n\n"
        "Verification hints:\n- run pytest\n"
    )


WRONG_1, WRONG_2, RIGHT = (
    reply("add", "a - b", 5),
    reply("add", "a * b", 5),
    reply("add", "a + b", 5),
)
MUL = reply("mul", "a * b", 6)
COHERENT = json.dumps({"meets_criteria": True, "reason": "the function and its test exist", "unmet": []})
ADD = RoadmapItem(
    title="Write add(a, b) in calc_add.py",
    acceptance_criteria=["add(2, 3) == 5, with a test"],
)
MULT = RoadmapItem(
    title="Write mul(a, b) in calc_mul.py",
    acceptance_criteria=["mul(2, 3) == 6, with a test"],
)


@pytest.fixture
def store(tmp_path):
    with EventStore(f"sqlite:///{tmp_path / 'events.db'}") as s:
        yield s


def run_relay(store, run_id, builder_replies, items, *, max_retries=3, files=None, on_event=None):
    """A relay driven live with scripted models; returns (final state, builder provider, verifier provider)."""
    bp = ScriptedProvider(builder_replies)
    vp = ScriptedProvider([COHERENT])
    shell = ActorShell(SchedulerBehaviour(), scheduler_stream(run_id), store, run_id=run_id).load()
    plan_relay(shell, "arithmetic", items, max_retries=max_retries, files=files or {})
    builder, verifier = Builder("scripted"), Verifier("scripted")
    state = drive_relay(
        shell,
        builder,
        verifier,
        RecordedEffects(
            store,
            builder_stream(run_id),
            run_id,
            LiveEffects(LlmGateway(bp), builder.invoker()),
        ),
        RecordedEffects(
            store,
            verifier_stream(run_id),
            run_id,
            LiveEffects(LlmGateway(vp), verifier.invoker()),
        ),
        on_event=on_event,
    )
    return state, bp, vp


def of_type(store, stream, cls):
    return [e for e in store.read_stream(stream) if isinstance(e, cls)]


def test_a_builder_that_fails_twice_passes_on_the_third_turn(store):
    state, bp, vp = run_relay(store, "r1", [WRONG_1, WRONG_2, RIGHT], [ADD])
    verdicts = of_type(store, scheduler_stream("r1"), TurnVerified)
    assert [v.status for v in verdicts] == ["FAILED", "FAILED", "PASSED"]
    assert verdicts[0].defect_capsule.defect_type == "test"
    assert verdicts[0].defect_capsule.metadata["failing_tests"] == ["test_add.py::test_add"]
    assert of_type(store, scheduler_stream("r1"), RoadmapCompleted)[0].passed == 1
    assert state.status == "done" and state.files["calc_add.py"].strip().endswith("a + b")
    assert bp.calls == 3 and vp.calls == 3
    # every effect was recorded before use: one LLM call per builder turn, checks as tools
    assert [e.call_index for e in of_type(store, builder_stream("r1"), LlmRequested)] == [1, 2, 3]
    tools = [e.type_name for e in store.read_stream(verifier_stream("r1")) if e.type_name.startswith("Tool")]
    assert tools.count("ToolReturned") == 6  # ruff and pytest, three turns


def test_the_defect_capsule_reaches_the_next_builder_prompt(store):
    run_relay(store, "r2", [WRONG_1, RIGHT], [ADD])
    requests = of_type(store, builder_stream("r2"), LlmRequested)
    first, retry = (
        requests[0].messages[-1]["content"],
        requests[1].messages[-1]["content"],
    )
    assert "FAILED verification" not in first
    assert "Your last attempt FAILED verification" in retry
    assert "test_add.py::test_add" in retry
    # a retry starts over from the files the item found (none), not from the failed attempt
    assert "return a - b" not in retry and "Current files: none yet" in retry
    # a retry is sampled warmer than the turn it repairs, and replay checks what was asked
    assert requests[0].params["temperature"] == 0.2
    assert requests[1].params["temperature"] == prompts.RETRY_TEMPERATURE


def test_escalation_after_max_retries_and_the_relay_moves_on(store):
    def builder(request):
        # The escalated item's failing code stays in the workspace: the next item's builder
        # mends it too, or its own verification would fail on it.
        return MUL + RIGHT if "mul(a, b)" in request.messages[-1]["content"].split("\n")[0] else WRONG_1

    state, bp, _ = run_relay(store, "r3", builder, [ADD, MULT], max_retries=1)
    escalations = of_type(store, scheduler_stream("r3"), EscalationRaised)
    assert len(escalations) == 1 and escalations[0].metadata["retry_count"] == 2
    done = of_type(store, scheduler_stream("r3"), RoadmapCompleted)[0]
    assert (done.passed, done.escalated) == (1, 1)
    assert state.item_status == ["escalated", "passed"] and bp.calls == 3


def test_a_relay_replays_with_zero_live_calls_and_a_changed_prompt_diverges(store, monkeypatch):
    _, bp, vp = run_relay(store, "r4", [WRONG_1, RIGHT], [ADD])
    records = list(store.read_all(run_id="r4"))
    report = replay_relay(records, "r4")
    assert report.ok, report.divergence and report.divergence.describe()
    assert report.llm_calls == 4 and report.tool_calls == 4
    assert (bp.calls, vp.calls) == (2, 2)  # nothing was called again

    monkeypatch.setattr(prompts, "BUILDER_SYSTEM", prompts.BUILDER_SYSTEM + "\nBe brief.")
    changed = replay_relay(records, "r4")
    assert not changed.ok
    assert changed.divergence.stream_id == builder_stream("r4"), changed.divergence.describe()
    assert changed.divergence.version == 1
    assert "diverged" in changed.divergence.reason


def test_a_restarted_driver_continues_from_the_log_without_calling_again(store):
    run_relay(store, "r5", [WRONG_1, RIGHT], [ADD])
    bp, vp = ScriptedProvider(["unused"]), ScriptedProvider(["unused"])
    shell = ActorShell(SchedulerBehaviour(), scheduler_stream("r5"), store, run_id="r5").load()
    before = store.stream_version(scheduler_stream("r5"))
    builder, verifier = Builder("scripted"), Verifier("scripted")
    drive_relay(
        shell, builder, verifier,
        RecordedEffects(store, builder_stream("r5"), "r5", LiveEffects(LlmGateway(bp), builder.invoker())),
        RecordedEffects(store, verifier_stream("r5"), "r5", LiveEffects(LlmGateway(vp), verifier.invoker())),
    )  # fmt: skip
    assert store.stream_version(scheduler_stream("r5")) == before and bp.calls == vp.calls == 0


def test_the_workspace_rebuilt_from_the_log_equals_the_git_tree_at_every_checkpoint(store, tmp_path):
    git = GitWorkspace(tmp_path / "ws").init()
    start = {"README.md": "# arithmetic\n"}
    git.write(start)
    git.commit("start")
    commits: dict[str, str] = {}

    def builder(request):
        return MUL if "mul(a, b)" in request.messages[-1]["content"].split("\n")[0] else RIGHT

    run_relay(
        store,
        "r6",
        builder,
        [ADD, MULT],
        files=start,
        on_event=git_mirror(git, commits),
    )
    log = store.read_stream(scheduler_stream("r6"))
    checkpoints = [e for e in log if isinstance(e, CheckpointStored)]
    assert len(checkpoints) == 2 and set(commits) == {c.checkpoint_id for c in checkpoints}
    for c in checkpoints:
        rebuilt = workspace_at(log, c.turn_id)
        assert git.tree_files(commits[c.checkpoint_id]) == rebuilt
        assert sorted(rebuilt) == c.files
    assert "calc_mul.py" in git.tree_files(commits[checkpoints[-1].checkpoint_id])


def test_an_edit_that_does_not_apply_is_an_empty_change_and_a_hint(store):
    bad = "Patched it.\n\n```diff\n--- a/missing.py\n+++ b/missing.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n```\n"
    state, _, _ = run_relay(store, "r7", [bad, RIGHT], [ADD], max_retries=1)
    batons = [e.baton for e in store.read_stream(scheduler_stream("r7")) if e.type_name == "BatonPassed"]
    assert batons[0].files_changed == []
    assert any("did not apply" in h and "missing.py" in h for h in batons[0].verification_hints)
    assert state.status == "done" and state.passed == 1  # the retry passed


def test_memory_of_past_turns_reaches_the_prompt_and_is_recorded(store):
    builder = Builder("scripted", memory=lambda text: ["turn 9: wrote sub(a, b) with a test"])
    bp, vp = ScriptedProvider([RIGHT]), ScriptedProvider([COHERENT])
    shell = ActorShell(SchedulerBehaviour(), scheduler_stream("r8"), store, run_id="r8").load()
    plan_relay(shell, "arithmetic", [ADD])
    verifier = Verifier("scripted")
    drive_relay(
        shell, builder, verifier,
        RecordedEffects(store, builder_stream("r8"), "r8", LiveEffects(LlmGateway(bp), builder.invoker())),
        RecordedEffects(store, verifier_stream("r8"), "r8", LiveEffects(LlmGateway(vp), verifier.invoker())),
    )  # fmt: skip
    assert "turn 9: wrote sub(a, b)" in bp.requests[0].messages[-1]["content"]
    assert [e.type_name for e in store.read_stream(builder_stream("r8"))][:2] == [
        "ToolCalled",
        "ToolReturned",
    ]
    report = replay_relay(list(store.read_all(run_id="r8")), "r8")
    assert report.ok, report.divergence and report.divergence.describe()


def test_a_driver_that_died_after_the_builders_call_uses_the_recorded_reply(store):
    """The builder's call was recorded but the driver died before the scheduler heard of it:
    the restarted driver reads the reply from the builder's stream and calls nothing again."""
    shell = ActorShell(SchedulerBehaviour(), scheduler_stream("r9"), store, run_id="r9").load()
    plan_relay(shell, "arithmetic", [ADD])
    first = ScriptedProvider([RIGHT])
    Builder("scripted").build(
        shell.state, RecordedEffects(store, builder_stream("r9"), "r9", LiveEffects(LlmGateway(first), None))
    )  # ... and the process dies here, before shell.handle
    bp, vp = ScriptedProvider([WRONG_1]), ScriptedProvider([COHERENT])
    shell = ActorShell(SchedulerBehaviour(), scheduler_stream("r9"), store, run_id="r9").load()
    builder, verifier = Builder("scripted"), Verifier("scripted")
    state = drive_relay(
        shell, builder, verifier,
        RecordedEffects(store, builder_stream("r9"), "r9", LiveEffects(LlmGateway(bp), builder.invoker())),
        RecordedEffects(store, verifier_stream("r9"), "r9", LiveEffects(LlmGateway(vp), verifier.invoker())),
    )  # fmt: skip
    assert (first.calls, bp.calls) == (1, 0) and state.status == "done" and state.passed == 1
    assert len(of_type(store, builder_stream("r9"), LlmRequested)) == 1


def test_a_real_run_fills_the_four_relay_views_and_a_rebuild_gives_the_same_rows(store):
    """seed 004's agent_turns, checkpoints, defects and escalations, from a relay whose first
    item escalates after failing twice and whose second passes."""
    from actors.relay.checkpoints import RelayCheckpoints, RelayCheckpointsProjection
    from projections import ProjectionRunner

    def builder(request):
        return MUL + RIGHT if "mul(a, b)" in request.messages[-1]["content"].split("\n")[0] else WRONG_1

    state, _, _ = run_relay(store, "views", builder, [ADD, MULT], max_retries=1)
    runner = ProjectionRunner(store, [RelayCheckpointsProjection()], batch_size=3)
    runner.run_once()
    tables = RelayCheckpointsProjection.tables
    rows = runner.views.dump(tables)
    relay = RelayCheckpoints(runner.views)
    task = state.task_id
    turns = relay.turns(task)
    verdicts = [e for e in store.read_stream(scheduler_stream("views")) if isinstance(e, TurnVerified)]
    assert len(turns) == 2 * len(verdicts) == 6  # a builder and a verifier row per turn
    builds = [t for t in turns if t.agent_role == "builder"]
    assert [(t.turn_number, t.status) for t in builds] == [(1, "failed"), (2, "failed"), (3, "passed")]
    [checkpoint] = relay.checkpoints(task)
    assert checkpoint.checkpoint_id == of_type(store, scheduler_stream("views"), CheckpointStored)[0].checkpoint_id
    defects = relay.defects(task)
    assert len(defects) == 2 and {(d.defect_type, d.resolved) for d in defects} == {("test", False)}
    [escalation] = relay.escalations(task)
    assert escalation.escalation_id == of_type(store, scheduler_stream("views"), EscalationRaised)[0].escalation_id
    runner.rebuild("relay")
    assert runner.views.dump(tables) == rows
