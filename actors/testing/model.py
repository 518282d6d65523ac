"""The scripted model: test doubles for the LLM door, kept in the package so Ray workers can
unpickle them (formerly `actors.runtime.llm.testing`).

`ScriptedProvider` serves canned replies instead of a model: fast, deterministic runs for
tests and benchmarks. It passes the same provider contract as the real adapters
(`tests/unit/test_llm_gateway.py`) and is registered as the "scripted" LLM.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from actors.runtime.llm.json_text import parse_json_object
from actors.runtime.llm.types import LlmRequest, LlmResult
from actors.runtime.registry import Registry


def _estimate_tokens(text: str) -> int:
    return len(text.split())


@Registry.register_llm("scripted")
class ScriptedProvider:
    """Canned replies: a list served in order (the last one repeats), or a function of the
    request. Picklable as long as the function is (a module-level function is)."""

    def __init__(
        self,
        responses: Sequence[str] | Callable[[LlmRequest], str],
        model: str = "scripted",
    ) -> None:
        if callable(responses):
            self._fn: Callable[[LlmRequest], str] | None = responses
            self._responses: list[str] = []
        else:
            if not responses:
                raise ValueError("ScriptedProvider needs at least one response")
            self._fn = None
            self._responses = list(responses)
        self.model = model
        self.calls = 0
        self.requests: list[LlmRequest] = []

    def complete(self, request: LlmRequest) -> LlmResult:
        started = time.monotonic()
        if self._fn is not None:
            content = self._fn(request)
        else:
            content = self._responses[min(self.calls, len(self._responses) - 1)]
        self.calls += 1
        self.requests.append(request)
        prompt = " ".join(str(m.get("content", "")) for m in request.messages)
        return LlmResult(
            content=content,
            parsed=parse_json_object(content),
            prompt_tokens=_estimate_tokens(prompt),
            completion_tokens=_estimate_tokens(content),
            latency_s=round(time.monotonic() - started, 6),
            model=request.model or self.model,
        )
