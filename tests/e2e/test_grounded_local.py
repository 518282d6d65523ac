"""The grounded agent on the local model (Qwen2.5-Coder-1.5B), one question of each harder kind
(a value read from code, a base class, a message text) over a small package written here,
which the model has never seen. Slow: every step is a real completion on the CPU.

What must hold, whatever the model does: no confident wrong answer (an answer is right, or it
says "Not found in the code"), and every answer that is not "not found" ends with the evidence
line the agent checked. One run of this test is kept as the fixture
tests/fixtures/runs/local_model_grounded_base_class_question.jsonl (a base-class question: two refused answers, the definitions read by the verify step, then the right answer), replayed in CI."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors import Client
from actors.agent.policy import unwrap_answer
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
QUESTIONS = [
    ("What is the default capacity of DispatchQueue?", "24"),
    ("Which class does QueueFullError subclass?", "DispatchError"),
    ("What message does DispatchQueue.put raise when the queue is full?", "slots are taken"),
]


def test_hard_questions_are_answered_from_quoted_lines_or_honestly_not_found(tmp_path: Path) -> None:
    worker_path()
    root = tmp_path / "repo"
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    settings = Settings.from_env(store_url=f"sqlite:///{tmp_path / 'chorus.db'}")
    verdicts = []
    with Client(settings=settings) as chorus:
        for question, expect in QUESTIONS:
            run = chorus.submit(question, root=root, max_iterations=6)
            result = run.wait(timeout=1500)
            assert result.ok, result.error
            answer = unwrap_answer(result.answer)
            events = [r.event for r in chorus.events(run.run_id)]
            started = next(e for e in events if e.type_name == "AgentStarted")
            assert started.grounded and "find_definition" in [t.name for t in started.tools]
            if answer.startswith("Not found"):
                verdicts.append("not found")
                continue
            assert "\n\nEvidence: shipping/" in answer, answer  # the line the agent checked
            verdicts.append("right" if expect.lower() in answer.lower() else "wrong")
            assert verdicts[-1] == "right", f"confident wrong answer to {question!r}: {answer}"
    assert "right" in verdicts, verdicts
