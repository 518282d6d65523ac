"""An endpoint that answers with something that is not a chat completion (a body that is not
JSON, an HTML page, a JSON list, choices without a message) is a failed LLM call, recorded as
`LlmFailed` with an `llm_error`, never an exception that ends the run as a `runtime_error`.
A model whose *reply text* is garbage is another matter: the ReAct agent rejects the step."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from actors.runtime.llm.gateway import LlmGateway
from actors.runtime.llm.providers import OpenAIProvider
from actors.runtime.llm.types import LlmRequest
from events.effects import LlmFailed
from tests.unit.test_react_agent import run_agent, types

BODIES = {
    "not-json": (b"{not json", "application/json"),
    "html": (b"<html><body>502 Bad Gateway</body></html>", "text/html"),
    "json-list": (b"[1, 2]", "application/json"),
    "choices-not-a-list": (b'{"choices": "x"}', "application/json"),
    "choice-without-message": (b'{"choices": [{"message": 5}]}', "application/json"),
}


@pytest.fixture
def endpoint() -> Any:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            body, content_type = BODIES[self.path.split("/")[1]]
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def provider(url: str) -> OpenAIProvider:
    return OpenAIProvider(base_url=url, model="m", timeout_s=10.0, max_retries=0, backoff_s=0.01)


@pytest.mark.parametrize("kind", sorted(BODIES))
def test_an_answer_that_is_not_a_chat_completion_is_an_llm_error(endpoint: str, kind: str) -> None:
    url = f"{endpoint}/{kind}/v1"
    outcome = LlmGateway(provider(url)).call(LlmRequest(model="m", messages=[{"role": "user", "content": "hi"}]), 1)
    assert not outcome.ok
    assert outcome.error is not None and outcome.error.type == "llm_error"
    assert outcome.error.reason == "server_error" and "unusable answer" in outcome.error.message
    assert [e.type_name for e in outcome.events] == ["LlmRequested", "LlmFailed"]


def test_a_react_run_records_the_non_json_answer_as_a_failed_call(tmp_path, endpoint: str) -> None:
    state, events, _, _ = run_agent(tmp_path, None, provider=provider(f"{endpoint}/not-json/v1"))
    assert state.status == "failed"
    assert state.error.type == "llm_error", state.error
    failed = [e for e in events if isinstance(e, LlmFailed)]
    assert failed and failed[0].error.type == "llm_error"


def test_garbage_reply_text_is_a_rejected_step_not_a_crash(tmp_path) -> None:
    state, events, _, _ = run_agent(tmp_path, ["this is not json at all"], max_iterations=2)
    assert types(events).count("StepRejected") == 2
    assert state.status == "failed" and state.error.type != "runtime_error"
