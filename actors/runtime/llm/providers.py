"""LLM providers: one interface, several adapters chosen by configuration.

- `OpenAIProvider`: any OpenAI-compatible endpoint (OpenAI, Azure, vLLM, LM Studio, Ollama,
  llama.cpp), streamed, with our own retries so every attempt is ours to count and bound.

The test double (`ScriptedProvider`, canned replies) is in `actors.testing` (`actors.testing.model`); replay
serves recorded completions through `actors.runtime.perform.ReplayEffects`, not a provider.

Every adapter passes the shared test case in `tests/unit/test_llm_gateway.py`.
"""

from __future__ import annotations

import functools
import inspect
import logging
import random
import socket
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from actors.runtime.lazy_client import LazyClient
from actors.runtime.llm.json_text import parse_json_object  # noqa: F401  (also re-exported)
from actors.runtime.llm.streaming import (
    Assembly,
    EventStream,
    Inactivity,
    StreamError,
    Unusable,
    from_body,
)
from actors.runtime.llm.types import LlmError, LlmRequest, LlmResult
from actors.runtime.registry import Registry
from events.errors import ErrorInfo

STRUCTURED_MODES = ("auto", "json_schema", "json_object")
log = logging.getLogger("chorus.llm")


@runtime_checkable
class LlmProvider(Protocol):
    def complete(self, request: LlmRequest) -> LlmResult: ...


# -- OpenAI-compatible endpoints ------------------------------------------------------------


@Registry.register_llm("openai")
class OpenAIProvider(LazyClient):
    """An OpenAI-compatible chat endpoint through the `openai` client.

    Completions are streamed (`stream=True`): `timeout_s` is the longest wait for the next
    token, not a limit on the whole answer, so a long answer that keeps coming is never cut
    off. Before the first token, anything the server sends (llama.cpp's server pings every
    15 s while a call waits its turn) shows it alive and holding the call. An endpoint that
    answers with one JSON body instead is read as before.

    The client's own retries are off (max_retries=0): this class retries real failures (429,
    5xx, a refused connection, a connect timeout, a stream broken off) with exponential
    backoff, and maps what is left to `LlmError`. A call that timed out waiting for a token
    is not resent: the server may still be working on it, and a resend would queue behind
    it. Each retry is recorded with the answer (`LlmResult.retries`, then `LlmCompleted`).

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
        progress: Callable[..., None] | None = None,
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
        # (request, tokens so far, seconds, done) about once a second while a call streams,
        # and once with done=True when it ends (`call_progress.ProgressNotes`)
        self.progress = progress
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
        retries: list[ErrorInfo] = []
        while True:
            kwargs = self._kwargs(request)
            try:
                answer = self._streamed(kwargs, request)
            except Unusable as e:
                raise unusable_answer(self.base_url, str(e)) from e
            except (openai.APIError, _Broken) as e:
                if isinstance(e, openai.APIError) and self._should_fall_back(request, e):
                    log.warning(
                        "%s refused response_format json_schema (%s); using json_object from now on",
                        self.base_url,
                        _describe(e),
                    )
                    self._mode = "json_object"
                    continue  # not a retry: a different request shape
                retryable, error = e.verdict if isinstance(e, _Broken) else classify_openai_error(e, self.base_url)
                if error.reason == "timeout" and not _never_sent(e):
                    retryable = False  # the server may still be computing it: never resend
                if not retryable or len(retries) >= self.max_retries:
                    if retries:
                        details = dict(error.error.details or {})
                        details["attempts"] = len(retries) + 1
                        error = LlmError(error.reason, error.error.message, details)
                    raise error from e
                log.warning("%s: %s; retrying", self.base_url, error.error.line())
                time.sleep(self._backoff(len(retries), e))
                retries.append(error.error)
                continue
            if request.response_schema is not None and self._mode == "json_schema":
                self._schema_worked = True
            content, model, prompt_tokens, completion_tokens = answer
            return LlmResult(
                content=content,
                parsed=parse_json_object(content),
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
                latency_s=round(time.monotonic() - started, 6),
                model=model or request.model or self.model,
                retries=retries,
            )

    def _streamed(self, kwargs: dict[str, Any], request: LlmRequest) -> tuple[str, str, int, int]:
        """(content, model, prompt tokens, completion tokens) of one attempt."""
        import httpx  # lazily, as openai

        create = self.client.chat.completions.with_streaming_response.create
        with create(**kwargs, stream=True, stream_options={"include_usage": True}) as raw:
            http = raw.http_response
            try:
                if "text/event-stream" not in http.headers.get("content-type", ""):
                    return from_body(http.read())  # an endpoint that does not stream
                return self._read_stream(http, request)
            except httpx.TimeoutException as e:
                raise _Broken(False, _timeout(self.base_url, f"no token for {self.timeout_s:g}s")) from e
            except (httpx.TransportError, httpx.StreamError) as e:
                raise _Broken(True, LlmError("unreachable", f"the answer from {self.base_url} broke off: "
                                             f"{type(e).__name__}", {"base_url": self.base_url})) from e  # fmt: skip

    def _read_stream(self, http: Any, request: LlmRequest) -> tuple[str, str, int, int]:
        started = time.monotonic()
        clock = Inactivity(self.timeout_s, started)
        assembly = Assembly()

        def lines() -> Any:
            for line in http.iter_lines():
                if not assembly.chunks_with_text:  # a call waiting its turn at a busy server:
                    clock.touch(time.monotonic())  # its pings say it is alive and holds the call
                yield line

        events = EventStream(lines())
        done, timed_out = threading.Event(), threading.Event()

        def watch() -> None:  # the reader blocks on the socket: cut it when no token comes
            while not done.wait(min(0.5, max(0.01, clock.left(time.monotonic())))):
                if clock.expired(time.monotonic()):
                    timed_out.set()
                    _cut(http)
                    return

        threading.Thread(target=watch, name="chorus-llm-inactivity", daemon=True).start()
        said = started
        try:
            for payload in events:
                if assembly.add(payload):
                    now = time.monotonic()
                    clock.touch(now)
                    if self.progress is not None and now - said >= 1.0:
                        said = now
                        self.progress(request, assembly.tokens, now - started)
        except StreamError as e:
            status = e.status if e.status is not None else 500
            details = {"base_url": self.base_url, "status": status}
            retryable = status == 429 or status >= 500
            reason = "rate_limited" if status == 429 else "server_error" if status >= 500 else "bad_request"
            raise _Broken(retryable, LlmError(reason, f"{self.base_url} failed mid-answer: {e}", details)) from e
        except Exception:
            if timed_out.is_set():
                raise _Broken(False, _timeout(self.base_url, f"no token for {self.timeout_s:g}s")) from None
            raise
        finally:
            done.set()
            if self.progress is not None:
                self.progress(request, assembly.tokens, time.monotonic() - started, True)
        if timed_out.is_set():
            raise _Broken(False, _timeout(self.base_url, f"no token for {self.timeout_s:g}s"))
        if not events.done:
            raise _Broken(True, LlmError("server_error", f"the answer from {self.base_url} ended before [DONE]",
                                         {"base_url": self.base_url}))  # fmt: skip
        if assembly.finish_reason is None:  # [DONE] without a reason: cut short (llama_cpp.server's interrupt_requests)
            raise _Broken(True, LlmError("server_error", f"the answer from {self.base_url} ended with no finish reason "
                                         "(cut short by the server)", {"base_url": self.base_url}))  # fmt: skip
        return assembly.content, assembly.model, assembly.prompt_tokens or 0, assembly.tokens

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


def unusable_answer(base_url: str, why: str) -> LlmError:
    """The endpoint answered, but not with a chat completion: a failed call (`llm_error`)."""
    return LlmError("server_error", f"unusable answer from {base_url}: {why}", {"base_url": base_url})


class _Broken(Exception):
    """An attempt that failed after the request went out: (retryable, the LlmError)."""

    def __init__(self, retryable: bool, error: LlmError) -> None:
        super().__init__(str(error))
        self.verdict = (retryable, error)


def _timeout(base_url: str, why: str) -> LlmError:
    return LlmError("timeout", f"no answer from {base_url} in time: {why}", {"base_url": base_url})


def _never_sent(e: BaseException) -> bool:
    """A timeout while connecting: the server never had the request, so it may be sent again."""
    import httpx  # lazily, as openai

    cause = e.__cause__ or e.__context__
    return isinstance(cause, httpx.ConnectTimeout)


def _cut(http: Any) -> None:
    """Break the connection under a response another thread is blocked reading: the reader
    wakes with an error, and the server sees its client gone (llama.cpp then stops)."""
    stream = getattr(http, "extensions", {}).get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
    else:  # pragma: no cover - a transport without a socket
        http.close()


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
    from actors.runtime.llm.call_progress import ProgressNotes, notes_dir

    return OpenAIProvider(
        base_url=url,
        model=settings.llm_model,
        api_key=settings.llm_api_key,
        timeout_s=settings.llm_timeout_s,
        max_retries=settings.llm_max_retries,
        structured=structured,
        progress=ProgressNotes(notes_dir(settings.data_dir)),
    )


def provider_and_server(settings: Any) -> tuple[LlmProvider, Any]:
    """The configured endpoint for a command that talks to the model directly (`python -m evals`):
    the provider, and the embedded llama.cpp server started for it (None when the endpoint is
    the user's own). The caller stops the server when done."""
    from actors.runtime.llm.local_server import (
        LocalLlamaServer,  # lazily: starts a process
    )

    if not settings.uses_embedded_llm:
        return provider_from_settings(settings), None
    server = LocalLlamaServer(settings)
    server.start()
    return provider_from_settings(settings, base_url=server.base_url), server
