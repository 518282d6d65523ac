"""The shared LLM server's idle decision and the wrapper's arguments: pure logic, no waiting."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from actors.runtime.llm import child
from actors.runtime.llm.idle import CountRequests, IdleClock, ModelsAtOnce


def test_idle_only_after_the_period_with_nothing_in_flight() -> None:
    clock = IdleClock(600, now=0.0)
    clock.begin(0.0)
    clock.end(0.0)
    assert not clock.expired(599.0)
    assert clock.expired(600.0)
    assert clock.left(100.0) == 500.0


def test_loading_the_model_before_the_first_request_is_not_idleness() -> None:
    clock = IdleClock(1, now=0.0, startup_s=300)
    assert not clock.expired(200.0)  # still loading, nobody has asked yet
    assert clock.expired(301.0)  # its starter never came: it goes anyway


def test_a_request_in_flight_is_never_idle_and_the_period_restarts_when_it_ends() -> None:
    clock = IdleClock(10, now=0.0, startup_s=0)
    clock.begin(5.0)
    assert not clock.expired(1_000.0)  # a ten-minute stream is not idleness
    clock.end(1_000.0)
    assert not clock.expired(1_009.0)
    assert clock.expired(1_010.0)


def test_overlapping_requests_count_until_the_last_ends() -> None:
    clock = IdleClock(10, now=0.0)
    clock.begin(1.0)
    clock.begin(2.0)
    clock.end(3.0)
    assert not clock.expired(100.0)
    clock.end(100.0)
    assert clock.expired(110.0)


def test_idle_zero_never_expires() -> None:
    assert not IdleClock(0, now=0.0, startup_s=0).expired(1e9)


def test_the_middleware_counts_a_request_while_it_is_served() -> None:
    clock = IdleClock(10, now=0.0)
    seen: list[int] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(clock.in_flight)
        if scope.get("path") == "/boom":
            raise RuntimeError("boom")

    wrapped = CountRequests(app, clock)
    asyncio.run(wrapped({"type": "http", "path": "/v1/models"}, None, None))
    with pytest.raises(RuntimeError):
        asyncio.run(wrapped({"type": "http", "path": "/boom"}, None, None))
    asyncio.run(wrapped({"type": "lifespan"}, None, None))
    assert seen == [1, 1, 0] and clock.in_flight == 0


def test_the_wrapper_reads_its_idle_period() -> None:
    assert child.parse(["0", "--idle-s", "600", "-m", "llama_cpp.server", "--port", "1"]) == (
        0, 600.0, ["-m", "llama_cpp.server", "--port", "1"],
    )  # fmt: skip
    assert child.parse(["42", "-c", "pass"]) == (42, 0.0, ["-c", "pass"])
    with pytest.raises(SystemExit):
        child.parse(["42", "--idle-s", "5"])


def test_llama_cpp_app_is_wrapped_to_count_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    import llama_cpp.server.app as app_module

    made = object()
    import llama_cpp

    monkeypatch.setattr(app_module, "create_app", lambda **kwargs: made)
    monkeypatch.setattr(llama_cpp.Llama, "create_chat_completion", llama_cpp.Llama.create_chat_completion)
    clock = IdleClock(10, now=0.0)
    child.instrument_llama_server(clock, child.model_aliases(["--model", "/m.gguf", "--model_alias", "q1"]))
    app = app_module.create_app(server_settings=None)
    assert isinstance(app, CountRequests) and app.clock is clock
    assert isinstance(app.app, ModelsAtOnce) and app.app.app is made


def test_models_are_listed_without_waiting_for_the_app() -> None:
    """llama.cpp's /v1/models waits for the model's lock (busy while it computes): the
    wrapper answers it without asking the app; anything else goes to the app."""
    reached: list[str] = []

    async def busy_app(scope: Any, receive: Any, send: Any) -> None:
        reached.append(scope["path"])

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    app = ModelsAtOnce(busy_app, ["q1"])
    asyncio.run(app({"type": "http", "method": "GET", "path": "/v1/models"}, None, send))
    asyncio.run(app({"type": "http", "method": "POST", "path": "/v1/chat/completions"}, None, send))
    assert reached == ["/v1/chat/completions"]
    assert sent[0]["status"] == 200 and json.loads(sent[1]["body"])["data"][0]["id"] == "q1"


def test_a_llama_stream_ends_with_its_usage() -> None:
    class Llama:  # what create_chat_completion does with it: tokenise the prompt, stream
        def tokenize(self, text: bytes, **kwargs: Any) -> list[int]:
            return list(range(len(text.split())))

    def stream(llama: Any) -> Any:
        llama.tokenize(b"a b c d e f g")  # the prompt: 7 tokens
        llama.tokenize(b"stop")
        for delta in ({"role": "assistant"}, {"content": "x"}, {"content": "y"}, {}):
            yield {"id": "c1", "created": 1, "model": "q", "choices": [{"delta": delta}]}

    llama, sizes = Llama(), []
    llama.tokenize = lambda text, **k: sizes.append(len(text.split())) or list(range(len(text.split())))
    restored = []
    chunks = list(child.with_usage(stream(llama), sizes, lambda: restored.append(True)))
    assert len(chunks) == 5 and restored == [True]
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"] == {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9}
