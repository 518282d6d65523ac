"""The grounded agent on the local model (Qwen2.5-Coder-1.5B), kept to one real call: a
base-class question over a small package written here, which the model has never seen, with
one iteration, so the model must answer at once. Then the run replays with no model.

What must hold, whatever the model does: no confident wrong answer (an answer is right, or it
says "Not found in the code", or the verify step refuses it and the run fails on its
iteration limit), and every answer that is not "not found" ends with the evidence line the
agent checked. The longer path (two refused answers, the definitions read by the verify step,
then the right answer) is asserted on the recorded run
tests/fixtures/runs/local_model_grounded_base_class_question.jsonl by
tests/integration/test_recorded_local_runs.py, which CI replays."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors import Client
from actors.agent.policy import unwrap_answer
from actors.runtime.replay import replay_run
from actors.runtime.settings import Settings
from tests.support.ray_env import worker_path

pytestmark = [pytest.mark.llm, pytest.mark.ray]

FILES = {
    "shipping/__init__.py": '"""Parcels, queues and limits for a small shipping service."""\n',
    "shipping/errors.py": (
        '"""Errors of the shipping service."""\n\n\n'
        "class ShippingError(Exception):\n"
        '    """Anything the service raises."""\n\n\n'
        "class DispatchError(ShippingError):\n"
        '    """A parcel could not be dispatched."""\n\n\n'
        "class QueueFullError(DispatchError):\n"
        '    """The dispatch queue has no room left."""\n'
    ),
    "shipping/queue.py": (
        "from shipping.errors import QueueFullError\n\n\n"
        "class DispatchQueue:\n"
        '    """Parcels waiting for a van."""\n\n'
        "    def __init__(self, capacity=24):\n"
        "        self.capacity = capacity\n"
        "        self.parcels = []\n\n"
        "    def put(self, parcel):\n"
        "        if len(self.parcels) >= self.capacity:\n"
        '            raise QueueFullError(f"no room for parcel {parcel.id}: all {self.capacity} slots are taken")\n'
        "        self.parcels.append(parcel)\n"
    ),
    "shipping/limits.py": (
        '"""How much one van may carry."""\n\n\n'
        "class VanLimits:\n"
        "    max_weight_kg = 1200\n"
        "    max_parcels = 80\n"
    ),
}
QUESTION, EXPECT = "Which class does QueueFullError subclass?", "DispatchError"


def test_a_question_is_answered_from_a_quoted_line_or_honestly_not(tmp_path: Path) -> None:
    worker_path()
    root = tmp_path / "repo"
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    settings = Settings.from_env(store_url=f"sqlite:///{tmp_path / 'chorus.db'}")
    with Client(settings=settings) as chorus:
        run = chorus.submit(
            QUESTION, root=root, max_iterations=1, llm_params={"temperature": 0.0, "max_tokens": 96}, grounded=True,
        )  # fmt: skip
        result = run.wait(timeout=1500)
        events = [r.event for r in chorus.events(run.run_id)]
        report = replay_run(chorus.store, run.run_id)
    started = next(e for e in events if e.type_name == "AgentStarted")
    assert started.grounded and "find_definition" in [t.name for t in started.tools]
    calls = [e for e in events if e.type_name in ("LlmCompleted", "LlmFailed")]
    assert len(calls) == 1
    if result.ok:
        answer = unwrap_answer(result.answer)
        if not answer.startswith("Not found"):
            assert "\n\nEvidence: shipping/" in answer, answer  # the line the agent checked
            assert EXPECT in answer, f"confident wrong answer: {answer}"
    else:  # the verify step refused the answer, and one iteration was all there was
        assert result.error.type == "iteration_limit", result.error
        assert any(e.type_name == "StepRejected" for e in events)
    assert report.ok and report.llm_calls == 1, report.divergence and report.divergence.describe()
