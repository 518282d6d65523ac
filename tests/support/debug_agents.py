"""The agent function and the scripted model the debugging page's browser test
(tests/integration/api/test_debug_page_browser.py) uses (Ray
workers import them by path: tests/ is on their PYTHONPATH)."""

from __future__ import annotations

import time

from actors.sdk import agent
from tests.support import fake_llm


@agent
def waits_for_approval(ctx, goal: str) -> str:
    """Waits for the signal "approval", then answers with its payload."""
    got = ctx.wait_for("approval")
    return f"{goal}: approved with {got!r}"


def slow_second_call(request) -> str:
    """fake_llm.search_read_answer, with its second call slow (the time axis's slow call)."""
    if fake_llm.step_of(request) == 2:
        time.sleep(0.5)
    return fake_llm.search_read_answer(request)
