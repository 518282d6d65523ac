"""Scripted models and helpers for the budget ledger's tests, importable by Ray workers."""

from __future__ import annotations

from typing import Any

from actors.runtime.llm.types import LlmRequest
from tests.support import fake_llm, fake_research


def no_repo_researcher(request: LlmRequest) -> str:
    """A researcher without a repository: its plan and report as fake_research's, then file
    reads that never answer (so only the budget ends it)."""
    if "Step" in str(request.messages[-1]["content"]):
        return fake_llm.never_answers(request)
    return fake_research.researcher(request)


def map_step(context: Any, requests: list[LlmRequest]) -> list[Any]:
    """A map step as a Ray task: the context's parallel calls."""
    return context.complete_many(requests)


def slow_orchestrator(request: LlmRequest) -> str:
    """codeqa_llm's orchestrator at 0.4 s a call, so a test can kill the lead mid-run."""
    import time

    from tests.support import codeqa_llm

    time.sleep(0.4)
    return codeqa_llm.orchestrator(request)
