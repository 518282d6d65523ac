"""The LLM door: one contract every provider passes, and each provider's own behaviour.

`ProviderContract` is the shared test case (the eventsourcing pattern): every adapter gets a
subclass that only says how to build a provider serving given replies. The OpenAI adapter
runs against a small OpenAI-compatible HTTP server started here on loopback, so retries,
fallbacks and timeouts go through the real `openai` client and real sockets.
"""

from __future__ import annotations

import json
import pickle
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from actors.runtime.llm.gateway import LlmGateway, LlmOutcome
from actors.runtime.llm.providers import (
    LlmProvider,
    OpenAIProvider,
    parse_json_object,
    provider_from_settings,
)
from actors.runtime.llm.types import LlmError, LlmRequest, LlmResult, ReplayDivergence
from actors.runtime.perform import ReplayEffects
from actors.runtime.registry import Registry
from actors.runtime.settings import Settings
from actors.testing.model import ScriptedProvider
from events.codec import decode_event, encode_event
from events.effects import LlmCompleted, LlmFailed, LlmRequested, ToolCalled

SCHEMA = {
    "type": "object",
    "properties": {"thought": {"type": "string"}, "answer": {"type": "string"}},
    "required": ["thought", "answer"],
}


def req(text: str = "hello", schema: dict[str, Any] | None = None, **params: Any) -> LlmRequest:
    return LlmRequest(
        model="test-model",
        messages=[{"role": "system", "content": "be brief"}, {"role": "user", "content": text}],
        params=params,
        response_schema=schema,
    )


# -- the shared contract --------------------------------------------------------------------


class ProviderContract:
    """Every provider adapter must pass these."""

    def make_provider(self, replies: list[str]) -> LlmProvider:
        raise NotImplementedError

    def test_is_a_provider(self) -> None:
        assert isinstance(self.make_provider(["x"]), LlmProvider)

    def test_returns_the_reply_with_usage_and_latency(self) -> None:
        result = self.make_provider(["hello there"]).complete(req())
        assert isinstance(result, LlmResult)
        assert result.content == "hello there"
        assert result.prompt_tokens >= 0 and result.completion_tokens >= 0
        assert result.latency_s >= 0
        assert isinstance(result.model, str) and result.model

    def test_replies_in_order(self) -> None:
        provider = self.make_provider(["one", "two"])
        assert [provider.complete(req(str(i))).content for i in range(3)] == ["one", "two", "two"]

    def test_parses_fenced_json(self) -> None:
        reply = 'Here you go:\n```json\n{"thought": "t", "answer": "42"}\n```'
        result = self.make_provider([reply]).complete(req(schema=SCHEMA))
        assert result.parsed == {"thought": "t", "answer": "42"}
        assert result.content == reply

    def test_garbage_is_content_not_a_crash(self) -> None:
        result = self.make_provider(["{ this is not json"]).complete(req(schema=SCHEMA))
        assert result.parsed is None
        assert result.content == "{ this is not json"

    def test_gateway_records_request_and_completion(self) -> None:
        request = req("what is 6*7?", schema=SCHEMA, temperature=0.0)
        outcome = LlmGateway(self.make_provider(['{"thought": "t", "answer": "42"}'])).call(request, 3)
        assert isinstance(outcome, LlmOutcome) and outcome.ok and outcome.error is None
        requested, completed = outcome.events
        assert isinstance(requested, LlmRequested) and isinstance(completed, LlmCompleted)
        assert requested.request_hash == completed.request_hash == request.hash()
        assert requested.call_index == completed.call_index == 3
        assert requested.messages == request.messages and requested.params == {"temperature": 0.0}
        assert requested.response_schema == SCHEMA
        assert completed.parsed == {"thought": "t", "answer": "42"} == outcome.result.parsed
        # payload only: the actor shell stamps the envelope
        assert requested.stream_id == "" and requested.version == 0 and requested.run_id == ""

    def test_provider_survives_pickling(self) -> None:
        provider = self.make_provider(["a", "b"])
        assert provider.complete(req()).content == "a"
        clone = pickle.loads(pickle.dumps(provider))
        assert clone.complete(req()).content == "b"


# -- scripted -------------------------------------------------------------------------------


def _echo(request: LlmRequest) -> str:  # module level: picklable
    return json.dumps({"thought": "echo", "answer": request.messages[-1]["content"]})


class TestScriptedProvider(ProviderContract):
    def make_provider(self, replies: list[str]) -> LlmProvider:
        return ScriptedProvider(replies)

    def test_callable_replies(self) -> None:
        provider = pickle.loads(pickle.dumps(ScriptedProvider(_echo)))
        assert provider.complete(req("ping")).parsed == {"thought": "echo", "answer": "ping"}

    def test_needs_a_reply(self) -> None:
        with pytest.raises(ValueError):
            ScriptedProvider([])

    def test_registered(self) -> None:
        assert Registry._llms["scripted"] is ScriptedProvider
        assert Registry._llms["openai"] is OpenAIProvider


# -- a small OpenAI-compatible server -------------------------------------------------------

Reply = tuple[int, Any, float]  # (status, body: dict for JSON or str for content, delay)


class FakeOpenAI:
    """/v1/chat/completions on loopback; `respond(body, n)` decides each answer."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.respond: Callable[[dict[str, Any], int], Reply] = lambda body, n: (200, "ok", 0.0)
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.bodies.append(body)
                status, payload, delay = fake.respond(body, len(fake.bodies))
                if delay:
                    time.sleep(delay)
                if isinstance(payload, str):
                    payload = completion(payload, body.get("model", ""))
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def serve(self, replies: list[str]) -> None:
        self.respond = lambda body, n: (200, replies[min(n, len(replies)) - 1], 0.0)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def completion(content: str, model: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": model or "fake",
        "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


def error(status: int, message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "server_error" if status >= 500 else "invalid_request_error", "code": status}}


@pytest.fixture
def fake() -> Any:
    server = FakeOpenAI()
    yield server
    server.close()


def openai_provider(url: str, **kw: Any) -> OpenAIProvider:
    kw.setdefault("timeout_s", 10.0)
    kw.setdefault("max_retries", 3)
    kw.setdefault("backoff_s", 0.01)
    kw.setdefault("backoff_max_s", 0.05)
    return OpenAIProvider(base_url=url, model="test-model", **kw)


class TestOpenAIProvider(ProviderContract):
    @pytest.fixture(autouse=True)
    def _server(self, fake: FakeOpenAI) -> None:
        self.fake = fake

    def make_provider(self, replies: list[str]) -> LlmProvider:
        self.fake.serve(replies)
        return openai_provider(self.fake.url)

    def test_usage_and_params_go_over_the_wire(self) -> None:
        self.fake.serve(["hi"])
        result = openai_provider(self.fake.url).complete(req(temperature=0.2, max_tokens=50, top_k=5))
        assert (result.prompt_tokens, result.completion_tokens) == (11, 7)
        body = self.fake.bodies[-1]
        assert body["model"] == "test-model" and body["messages"][-1]["content"] == "hello"
        assert body["temperature"] == 0.2 and body["max_tokens"] == 50
        assert body["top_k"] == 5  # not an openai argument: sent in the body as is
        assert "response_format" not in body

    def test_rate_limit_then_success_is_retried(self) -> None:
        self.fake.respond = lambda body, n: (429, error(429, "slow down"), 0.0) if n == 1 else (200, "fine", 0.0)
        assert openai_provider(self.fake.url).complete(req()).content == "fine"
        assert len(self.fake.bodies) == 2

    def test_server_errors_are_retried_with_backoff_then_given_up(self) -> None:
        self.fake.respond = lambda body, n: (503, error(503, "overloaded"), 0.0)
        provider = openai_provider(self.fake.url, max_retries=2, backoff_s=0.05)
        started = time.monotonic()
        with pytest.raises(LlmError) as info:
            provider.complete(req())
        assert info.value.error.type == "llm_error" and info.value.reason == "server_error"
        assert info.value.error.details["attempts"] == 3
        assert len(self.fake.bodies) == 3
        assert time.monotonic() - started >= 0.05 + 0.05  # two backoffs (cap 0.05)

    def test_rate_limit_exhausted(self) -> None:
        self.fake.respond = lambda body, n: (429, error(429, "slow down"), 0.0)
        with pytest.raises(LlmError) as info:
            openai_provider(self.fake.url, max_retries=1).complete(req())
        assert info.value.reason == "rate_limited" and len(self.fake.bodies) == 2

    def test_bad_request_is_not_retried(self) -> None:
        self.fake.respond = lambda body, n: (400, error(400, "context too long"), 0.0)
        with pytest.raises(LlmError) as info:
            openai_provider(self.fake.url).complete(req())
        assert info.value.reason == "bad_request" and "context too long" in info.value.error.message
        assert len(self.fake.bodies) == 1

    def test_auto_falls_back_to_json_object_for_good(self) -> None:
        def llama_like(body: dict[str, Any], n: int) -> Reply:
            if body.get("response_format", {}).get("type") == "json_schema":
                return 500, error(500, "json_schema is not supported"), 0.0
            return 200, '{"thought": "t", "answer": "a"}', 0.0

        self.fake.respond = llama_like
        provider = openai_provider(self.fake.url, structured="auto")
        assert provider.complete(req(schema=SCHEMA)).parsed == {"thought": "t", "answer": "a"}
        first, second = self.fake.bodies
        assert first["response_format"] == {"type": "json_schema", "json_schema": {"name": "step", "schema": SCHEMA}}
        assert second["response_format"] == {"type": "json_object", "schema": SCHEMA}
        assert provider.mode == "json_object"
        provider.complete(req("again", schema=SCHEMA))
        assert len(self.fake.bodies) == 3  # straight to json_object
        assert self.fake.bodies[-1]["response_format"]["type"] == "json_object"

    def test_auto_keeps_json_schema_once_it_worked(self) -> None:
        self.fake.respond = lambda body, n: (200, '{"a": 1}', 0.0) if n == 1 else (500, error(500, "boom"), 0.0)
        provider = openai_provider(self.fake.url, structured="auto", max_retries=1)
        provider.complete(req(schema=SCHEMA))
        with pytest.raises(LlmError) as info:
            provider.complete(req(schema=SCHEMA))
        assert info.value.reason == "server_error" and provider.mode == "json_schema"
        assert all(b["response_format"]["type"] == "json_schema" for b in self.fake.bodies)

    def test_auto_does_not_fall_back_on_rate_limit(self) -> None:
        self.fake.respond = lambda body, n: (429, error(429, "slow"), 0.0) if n == 1 else (200, '{"a": 1}', 0.0)
        provider = openai_provider(self.fake.url, structured="auto")
        assert provider.complete(req(schema=SCHEMA)).parsed == {"a": 1}
        assert provider.mode == "json_schema"
        assert [b["response_format"]["type"] for b in self.fake.bodies] == ["json_schema", "json_schema"]

    def test_explicit_json_schema_does_not_fall_back(self) -> None:
        self.fake.respond = lambda body, n: (500, error(500, "json_schema is not supported"), 0.0)
        with pytest.raises(LlmError) as info:
            openai_provider(self.fake.url, structured="json_schema", max_retries=1).complete(req(schema=SCHEMA))
        assert info.value.reason == "server_error"
        assert [b["response_format"]["type"] for b in self.fake.bodies] == ["json_schema", "json_schema"]

    def test_slow_reply_times_out(self) -> None:
        self.fake.respond = lambda body, n: (200, "too late", 2.0)
        provider = openai_provider(self.fake.url, timeout_s=0.3, max_retries=1)
        outcome = LlmGateway(provider).call(req(), 1)
        # had the 0.3 s timeout not fired, the reply would have come (after 2 s) and been a success
        assert not outcome.ok and outcome.result is None
        assert outcome.error.type == "llm_error" and outcome.error.reason == "timeout"
        requested, failed = outcome.events
        assert isinstance(requested, LlmRequested) and isinstance(failed, LlmFailed)
        assert failed.error == outcome.error and failed.request_hash == requested.request_hash
        assert len(self.fake.bodies) == 1  # never resent: the server may still be computing it

    def test_unreachable_endpoint(self) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]  # closed once we leave: nothing listens there
        provider = openai_provider(f"http://127.0.0.1:{port}/v1", max_retries=1)
        with pytest.raises(LlmError) as info:
            provider.complete(req())
        assert info.value.reason == "unreachable" and str(port) in info.value.error.message



def test_llm_error_pickles_and_knows_its_reasons() -> None:
    e = LlmError("timeout", "no answer", {"base_url": "x"})
    clone = pickle.loads(pickle.dumps(e))
    assert clone.error == e.error and str(clone) == str(e)
    assert e.error.type == "llm_error" and e.error.line() == "llm_error (timeout): no answer"
    with pytest.raises(ValueError):
        LlmError("sleepy", "not a reason")


# -- replay ---------------------------------------------------------------------------------


def record(requests: list[LlmRequest], replies: list[str]) -> list[Any]:
    gateway = LlmGateway(ScriptedProvider(replies))
    events: list[Any] = []
    for i, request in enumerate(requests, 1):
        events.extend(gateway.call(request, i).events)
        events.append(ToolCalled(tool="read_file", args={"path": "README.md"}, call_index=i))
    return events


def through_store(events: list[Any]) -> list[Any]:
    """What a replay actually reads: events that went through the codec."""
    return [decode_event(e.type_name, "agent-1", i, encode_event(e)) for i, e in enumerate(events, 1)]


class TestReplayEffects:
    """What `chorus replay` serves recorded completions with (actors.runtime.perform)."""

    requests = [req("first"), req("second", schema=SCHEMA, temperature=0.0), req("third")]
    replies = ["a", '{"thought": "t", "answer": "b"}', "c"]

    def test_serves_the_recording_in_order_and_reproduces_the_events(self) -> None:
        recorded = through_store(record(self.requests, self.replies))
        replay = ReplayEffects(recorded)
        replayed = [e for i, r in enumerate(self.requests, 1) for e in replay.llm(r, i)]
        llm_events = [e for e in recorded if isinstance(e, (LlmRequested, LlmCompleted))]
        assert [e.payload() for e in replayed] == [e.payload() for e in llm_events]
        assert replay.live_calls == 0

    def test_a_different_request_diverges_and_says_where(self) -> None:
        replay = ReplayEffects(through_store(record(self.requests, self.replies)))
        replay.llm(self.requests[0], 1)
        changed = req("second, but worded differently", schema=SCHEMA, temperature=0.0)
        with pytest.raises(ReplayDivergence) as info:
            replay.llm(changed, 2)
        e = info.value
        assert e.call_index == 2
        assert e.expected_hash == self.requests[1].hash() and e.actual_hash == changed.hash()
        text = str(e)
        assert "call 2" in text and e.expected_hash[:12] in text and e.actual_hash[:12] in text
        assert "-second" in text and "+second, but worded differently" in text
        assert e.error.type == "replay_divergence"
        assert pickle.loads(pickle.dumps(e)).call_index == 2

    def test_changed_parameters_are_named(self) -> None:
        replay = ReplayEffects(record(self.requests[:1], self.replies))
        with pytest.raises(ReplayDivergence) as info:
            replay.llm(req("first", temperature=0.7), 1)
        assert "params" in str(info.value)

    def test_a_call_the_log_does_not_hold_fails_closed(self) -> None:
        replay = ReplayEffects(record(self.requests[:1], self.replies))
        replay.llm(self.requests[0], 1)
        with pytest.raises(ReplayDivergence) as info:
            replay.llm(self.requests[1], 2)
        assert info.value.call_index == 2 and info.value.expected_hash is None

    def test_a_recorded_failure_is_served_as_the_same_failure(self) -> None:
        request = req("x")
        requested = LlmRequested(
            model=request.model, messages=request.messages, request_hash=request.hash(), call_index=1
        )
        failed = LlmFailed(
            request_hash=request.hash(),
            call_index=1,
            error=LlmError("timeout", "no answer in time").error,
        )
        served = ReplayEffects([requested, failed]).llm(request, 1)
        assert [type(e) for e in served] == [LlmRequested, LlmFailed]
        assert served[1].error.reason == "timeout"


# -- the request hash -----------------------------------------------------------------------


class TestRequestHash:
    def test_stable_across_versions(self) -> None:
        # Old logs are matched by this value: changing how we hash breaks every recording.
        assert req("hello", schema=SCHEMA, temperature=0.0).hash() == (
            "1e71eb1c05fb98a6ce9a1047e23056a008d3e5a7db895e399f11b004e9019c4f"
        )

    def test_independent_of_key_order(self) -> None:
        a = LlmRequest(model="m", messages=[{"role": "user", "content": "x"}], params={"a": 1, "b": 2})
        b = LlmRequest(model="m", messages=[{"content": "x", "role": "user"}], params={"b": 2, "a": 1})
        assert a.hash() == b.hash()

    @pytest.mark.parametrize(
        "other",
        [
            LlmRequest(model="m2", messages=[{"role": "user", "content": "x"}]),
            LlmRequest(model="m", messages=[{"role": "user", "content": "y"}]),
            LlmRequest(model="m", messages=[{"role": "user", "content": "x"}], params={"temperature": 0}),
            LlmRequest(model="m", messages=[{"role": "user", "content": "x"}], response_schema={"type": "object"}),
        ],
    )
    def test_every_field_counts(self, other: LlmRequest) -> None:
        assert LlmRequest(model="m", messages=[{"role": "user", "content": "x"}]).hash() != other.hash()

    def test_survives_the_event_codec(self) -> None:
        request = req("héllo ✓", schema=SCHEMA, temperature=0.0, stop=["</answer>"])
        event = LlmGateway(ScriptedProvider(["x"])).call(request, 1).events[0]
        back = decode_event(event.type_name, "s", 1, encode_event(event))
        assert LlmRequest.from_recorded(back).hash() == back.request_hash == request.hash()

    def test_frozen(self) -> None:
        with pytest.raises(Exception):
            req().model = "other"  # type: ignore[misc]


# -- parsing and configuration --------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ('{"a": 1}', {"a": 1}),
        ('```json\n{"a": {"b": [1, 2]}}\n```', {"a": {"b": [1, 2]}}),
        ('Sure! {"a": "}"} hope that helps', {"a": "}"}),
        ("```\nnot json\n``` but {\"a\": 2}", {"a": 2}),
        ("[1, 2, 3]", None),
        ("", None),
        ("{{{{", None),
        ("no json at all", None),
    ],
)
def test_parse_json_object(text: str, parsed: dict[str, Any] | None) -> None:
    assert parse_json_object(text) == parsed


def test_provider_from_settings(tmp_path: Any) -> None:
    embedded = Settings(data_dir=tmp_path, store_url="sqlite://", llm_port=9999)
    p = provider_from_settings(embedded)
    assert p.base_url == "http://127.0.0.1:9999/v1" and p.mode == "json_object"
    assert provider_from_settings(embedded, base_url="http://h:1/v1").base_url == "http://h:1/v1"
    hosted = Settings(
        data_dir=tmp_path, store_url="sqlite://", llm_base_url="https://api.example/v1",
        llm_model="gpt-x", llm_api_key="k", llm_timeout_s=7, llm_max_retries=1,
    )  # fmt: skip
    p = provider_from_settings(hosted)
    assert (p.base_url, p.model, p.api_key, p.timeout_s, p.max_retries, p.mode) == (
        "https://api.example/v1", "gpt-x", "k", 7.0, 1, "json_schema",
    )  # fmt: skip
