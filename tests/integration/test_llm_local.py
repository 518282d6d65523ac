"""Through the real embedded server: llama.cpp with the assembled Qwen2.5-Coder-1.5B model."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from actors.runtime.llm.gateway import LlmGateway
from actors.runtime.llm.local_server import LocalLlamaServer, answers
from actors.runtime.llm.providers import OpenAIProvider, provider_from_settings
from actors.runtime.llm.types import LlmRequest
from actors.runtime.settings import Settings

pytestmark = pytest.mark.llm

SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "country": {"type": "string"},
        "is_capital": {"type": "boolean"},
    },
    "required": ["city", "country", "is_capital"],
}


@pytest.fixture(scope="module")
def local() -> Iterator[tuple[Settings, LocalLlamaServer]]:
    """A server of its own, on a free port, stopped with it (idle_s=0, not the shared one):
    never one left running by something else."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings = Settings.from_env().model_copy(update={"llm_port": port})
    with LocalLlamaServer(settings, idle_s=0) as server:
        assert answers(server.port) and not server.reused
        yield settings, server
    assert not answers(port), "stop() left the server running"


def ask(model: str, structured: bool = True) -> LlmRequest:
    return LlmRequest(
        model=model,
        messages=[
            {"role": "system", "content": "You answer with one JSON object and nothing else."},
            {"role": "user", "content": "Which country is Paris in, and is it that country's capital?"},
        ],
        params={"temperature": 0.0, "max_tokens": 60, "seed": 7},
        response_schema=SCHEMA if structured else None,
    )


def test_structured_answer_matches_the_schema(local: tuple[Settings, LocalLlamaServer]) -> None:
    settings, server = local
    outcome = LlmGateway(provider_from_settings(settings, base_url=server.base_url)).call(
        ask(settings.llm_model), 1
    )
    assert outcome.ok, outcome.error
    parsed = outcome.result.parsed
    assert parsed is not None, outcome.result.content
    assert set(parsed) >= {"city", "country", "is_capital"}
    assert isinstance(parsed["city"], str) and isinstance(parsed["country"], str)
    assert isinstance(parsed["is_capital"], bool)
    assert "paris" in parsed["city"].lower() and "france" in parsed["country"].lower()
    assert outcome.result.prompt_tokens > 0 and outcome.result.completion_tokens > 0
    assert outcome.events[1].parsed == parsed


def test_any_model_name_and_auto_fallback(local: tuple[Settings, LocalLlamaServer]) -> None:
    """The server serves its one model whatever name we send; it refuses json_schema, so
    "auto" settles on json_object after one refused call."""
    _, server = local
    provider = OpenAIProvider(base_url=server.base_url, model="some-other-name", structured="auto", timeout_s=300)
    result = provider.complete(ask("some-other-name"))
    assert provider.mode == "json_object"
    assert result.parsed is not None and "paris" in str(result.parsed.get("city", "")).lower()
