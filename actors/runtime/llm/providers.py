"""LLM providers: one interface, several adapters chosen by configuration.

- `OpenAIProvider`: any OpenAI-compatible endpoint (OpenAI, Azure, vLLM, LM Studio, Ollama,
  llama.cpp), with our own retries so every attempt is ours to count and bound.

The test double (`ScriptedProvider`, canned replies) is in `actors.testing` (`actors.testing.model`); replay
serves recorded completions through `actors.runtime.perform.ReplayEffects`, not a provider.

Every adapter passes the shared test case in `tests/unit/test_llm_gateway.py`.
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
import random
import time
from typing import Any, Protocol, runtime_checkable

from actors.runtime.lazy_client import LazyClient
from actors.runtime.llm.json_text import parse_json_object  # noqa: F401  (also re-exported)
from actors.runtime.llm.types import LlmError, LlmRequest, LlmResult
from actors.runtime.registry import Registry

STRUCTURED_MODES = ("auto", "json_schema", "json_object")
log = logging.getLogger("chorus.llm")


@runtime_checkable
class LlmProvider(Protocol):
    def complete(self, request: LlmRequest) -> LlmResult: ...


# -- OpenAI-compatible endpoints ------------------------------------------------------------


@Registry.register_llm("openai")
class OpenAIProvider(LazyClient):
    """An OpenAI-compatible chat endpoint through the `openai` client.

    The client's own retries are off (max_retries=0): this class retries 429, 5xx, connection
    errors and timeouts with exponential backoff, and maps what is left to `LlmError`.

    Structured output (when a request carries `response_schema`):
    - "json_schema": `{"type": "json_schema", "json_schema": {"name": "step", "schema": ...}}`
    - "json_object": `{"type": "json_object", "schema": ...}`, which llama.cpp's server accepts
      and uses to constrain decoding (it answers json_schema with HTTP 500).
    - "auto": json_schema until a non-rate-limit 4xx/5xx answers it, then json_object for the
      rest of this provider's life (unless json_schema has already worked here once).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str = "not-needed",
        timeout_s: float = 300.0,
        max_retries: int = 3,
        structured: str = "auto",
        backoff_s: float = 0.5,
        backoff_max_s: float = 20.0,
    ) -> None:
        if structured not in STRUCTURED_MODES:
            raise ValueError(f"structured={structured!r}: use one of {STRUCTURED_MODES}")
        self.base_url = base_url
        self.model = model
        self.api_key = api_key
        self.timeout_s = float(timeout_s)
        self.max_retries = int(max_retries)
        self.structured = structured
        self.backoff_s = backoff_s
        self.backoff_max_s = backoff_max_s
        self._mode = "json_schema" if structured == "auto" else structured
        self._schema_worked = False
        self._client: Any = None  # holds sockets and locks: rebuilt after pickling (Ray)

    @property
    def mode(self) -> str:
        """The structured-output mode in use now ("json_schema" or "json_object")."""
        return self._mode

    @property
    def client(self) -> Any:
        return self.live_client()

    def connect(self) -> Any:
        return openai_client(self.base_url, self.api_key, self.timeout_s, max_retries=0)

    def complete(self, request: LlmRequest) -> LlmResult:
        import openai  # lazily: scripted and replayed runs never load the client

        started = time.monotonic()
        attempt = 0
        while True:
            kwargs = self._kwargs(request)
            try:
                response = self.client.chat.completions.create(**kwargs)
            except json.JSONDecodeError as e:  # the endpoint's HTTP body is not JSON at all
                raise unusable_answer(self.base_url, f"its reply is not JSON ({e.msg})") from e
            except openai.APIError as e:
                if self._should_fall_back(request, e):
                    log.warning(
                        "%s refused response_format json_schema (%s); using json_object from now on",
                        self.base_url,
                        _describe(e),
                    )
                    self._mode = "json_object"
                    continue  # not a retry: a different request shape
                retryable, error = classify_openai_error(e, self.base_url)
                if not retryable or attempt >= self.max_retries:
                    if attempt:
                        details = dict(error.error.details or {})
                        details["attempts"] = attempt + 1
                        error = LlmError(error.reason, error.error.message, details)
                    raise error from e
                time.sleep(self._backoff(attempt, e))
                attempt += 1
                continue
            if request.response_schema is not None and self._mode == "json_schema":
                self._schema_worked = True
            return self._result(response, request, time.monotonic() - started)

    # -- internals --------------------------------------------------------------------------

    def _kwargs(self, request: LlmRequest) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"model": request.model or self.model, "messages": request.messages}
        extra: dict[str, Any] = {}
        for key, value in request.params.items():
            (kwargs if key in _create_params() else extra)[key] = value
        if request.response_schema is not None:
            if self._mode == "json_schema":
                kwargs["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": "step", "schema": request.response_schema},
                }
            else:
                kwargs["response_format"] = {"type": "json_object", "schema": request.response_schema}
        if extra:
            kwargs["extra_body"] = extra
        return kwargs

    def _should_fall_back(self, request: LlmRequest, e: Exception) -> bool:
        import openai  # lazily: scripted and replayed runs never load the client

        return (
            self.structured == "auto"
            and self._mode == "json_schema"
            and not self._schema_worked
            and request.response_schema is not None
            and isinstance(e, openai.APIStatusError)
            and e.status_code != 429
            and 400 <= e.status_code < 600
        )

    def _backoff(self, attempt: int, e: Exception) -> float:
        delay = min(self.backoff_max_s, self.backoff_s * (2**attempt))
        retry_after = _retry_after(e)
        if retry_after is not None:
            delay = min(self.backoff_max_s, max(delay, retry_after))
        return delay * (1 + 0.1 * random.random())

    def _result(self, response: Any, request: LlmRequest, latency_s: float) -> LlmResult:
        content = chat_content(response, self.base_url)
        usage = getattr(response, "usage", None)
        return LlmResult(
            content=content,
            parsed=parse_json_object(content),
            prompt_tokens=_count(getattr(usage, "prompt_tokens", 0)),
            completion_tokens=_count(getattr(usage, "completion_tokens", 0)),
            latency_s=round(latency_s, 6),
            model=getattr(response, "model", None) or request.model or self.model,
        )


def unusable_answer(base_url: str, why: str) -> LlmError:
    """The endpoint answered, but not with a chat completion: a failed call (`llm_error`)."""
    return LlmError("server_error", f"unusable answer from {base_url}: {why}", {"base_url": base_url})


def chat_content(response: Any, base_url: str) -> str:
    """The first choice's text; LlmError when `response` is not a chat completion (an HTML
    page, a JSON list, choices without a message, ...)."""
    choices = getattr(response, "choices", None)
    if not isinstance(choices, list):
        raise unusable_answer(base_url, f"not a chat completion (got {type(response).__name__})")
    if not choices:
        return ""
    message = getattr(choices[0], "message", None)
    if message is None or not hasattr(message, "content"):
        raise unusable_answer(base_url, "its first choice has no message")
    if message.content is not None and not isinstance(message.content, str):
        raise unusable_answer(base_url, "its first choice's message is not text")
    return message.content or ""


def _count(value: Any) -> int:
    try:
        return max(0, int(value or 0))
    except (TypeError, ValueError):
        return 0


@functools.cache  # on first call, not at import: loading openai costs every `chorus` ~1s
def _create_params() -> frozenset[str]:
    try:
        from openai.resources.chat.completions import Completions  # lazily, as openai

        names = set(inspect.signature(Completions.create).parameters)
    except Exception:  # pragma: no cover - an openai without that layout
        names = {"temperature", "max_tokens", "top_p", "stop", "seed", "n"}
    return frozenset(names - {"self", "messages", "model", "response_format", "stream"})



def _describe(e: Exception) -> str:
    status = getattr(e, "status_code", None)
    text = str(e).splitlines()[0] if str(e) else type(e).__name__
    return f"HTTP {status}: {text[:200]}" if status else text[:200]


def _retry_after(e: Exception) -> float | None:
    response = getattr(e, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    try:
        return float(headers.get("retry-after"))
    except (TypeError, ValueError):
        return None


def openai_client(base_url: str, api_key: str, timeout_s: float, max_retries: int) -> Any:
    """An `openai.OpenAI` client for an OpenAI-compatible endpoint (chat or embeddings)."""
    import openai  # lazily: scripted and replayed runs never load the client

    return openai.OpenAI(
        base_url=base_url,
        api_key=api_key or "not-needed",
        timeout=timeout_s,
        max_retries=max_retries,
    )


def classify_openai_error(e: Exception, base_url: str) -> tuple[bool, LlmError]:
    """(retryable, the LlmError to raise if we give up) for an `openai.APIError`."""
    import openai  # lazily: scripted and replayed runs never load the client

    if isinstance(e, openai.APITimeoutError):
        return True, LlmError("timeout", f"no answer from {base_url} in time", {"base_url": base_url})
    if isinstance(e, openai.APIConnectionError):
        return True, LlmError(
            "unreachable", f"cannot reach the LLM endpoint {base_url}: {_describe(e)}", {"base_url": base_url}
        )
    if isinstance(e, openai.APIStatusError):
        details = {"base_url": base_url, "status": e.status_code}
        if e.status_code == 429:
            return True, LlmError("rate_limited", f"rate limited by {base_url}: {_describe(e)}", details)
        if e.status_code >= 500:
            return True, LlmError("server_error", f"{base_url} failed: {_describe(e)}", details)
        return False, LlmError("bad_request", f"{base_url} refused the request: {_describe(e)}", details)
    # APIResponseValidationError and other APIErrors: the server answered something unusable.
    return False, LlmError("server_error", f"unusable answer from {base_url}: {_describe(e)}", {"base_url": base_url})


# -- configuration --------------------------------------------------------------------------


def provider_from_settings(settings: Any, base_url: str | None = None) -> OpenAIProvider:
    """The provider configuration asks for.

    With no endpoint configured, it talks to the embedded llama.cpp server on loopback
    (`LocalLlamaServer` starts it at that address) using json_object, which that server needs.
    """
    url = base_url or settings.llm_base_url
    structured = settings.llm_structured
    if url is None:
        url = f"http://127.0.0.1:{settings.llm_port}/v1"
    if settings.uses_embedded_llm and structured == "auto":
        structured = "json_object"
    return OpenAIProvider(
        base_url=url,
        model=settings.llm_model,
        api_key=settings.llm_api_key,
        timeout_s=settings.llm_timeout_s,
        max_retries=settings.llm_max_retries,
        structured=structured,
    )


def provider_and_server(settings: Any) -> tuple[LlmProvider, Any]:
    """The configured endpoint for a command that talks to the model directly (`chorus eval`):
    the provider, and the embedded llama.cpp server started for it (None when the endpoint is
    the user's own). The caller stops the server when done."""
    from actors.runtime.llm.local_server import LocalLlamaServer  # lazily: starts a process

    if not settings.uses_embedded_llm:
        return provider_from_settings(settings), None
    server = LocalLlamaServer(settings)
    server.start()
    return provider_from_settings(settings, base_url=server.base_url), server
