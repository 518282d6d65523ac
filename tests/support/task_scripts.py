"""Scripted model replies for the director-evaluator workflow (seed 001) in tests."""

from __future__ import annotations

import json
from pathlib import Path

EXAMPLE = Path(__file__).parents[2] / "actors" / "tasks" / "examples" / "director_evaluator.sexp"


def verdict(accepted: bool, feedback: str) -> str:
    return json.dumps({"accepted": accepted, "feedback": feedback})


def director_evaluator_script(accept_on: int) -> list[str]:
    """Director drafts "Draft N"; the evaluator rejects until round `accept_on`."""
    replies = []
    for n in range(1, 10):
        replies += [f"Draft {n}.", verdict(n == accept_on, f"feedback {n}")]
    return replies
