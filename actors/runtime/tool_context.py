"""What a tool that thinks gets from the run: the LLM gateway and the embedder, with every LLM
call recorded in the tool's own stream before its result is used (rule 2).

Some tools call a model themselves (seed 003's `semantic_file_search` writes a HyDE answer;
seed 000's RepositorySearcher summarises snippets). The agent records such a tool's *result*
(ToolCalled/ToolReturned in its own stream), so replaying the agent needs no model; the
context records the tool's *inner* calls, one stream per tool and run
(`tool:NAME:RUN_ID`), so the audit trail's LLM call log and token totals show them too.

The stream is idempotent like an actor's: calls are keyed by their request, so a tool re-run
after a crash is served what its previous life recorded (the n-th use of a request in this
life gets the n-th recorded answer to it) instead of calling the model again. Every call it
does make draws on the run's budget first (`actors.runtime.ledger`).

A tool declares `uses_context = True`; the agent actor then passes `context=ToolContext(...)`
in its config. Tests and the retrieval evaluation build one over any provider and store:
`ToolContext.local(provider)` records into an in-memory store.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from actors.runtime.embeddings import embedder_from_settings
from actors.runtime.ledger import BudgetExhausted, Usage, estimate_tokens, usage_of
from actors.runtime.llm.gateway import LlmGateway
from actors.runtime.llm.providers import provider_from_settings
from actors.runtime.llm.types import LlmError, LlmRequest, LlmResult
from actors.runtime.registry import Registry
from actors.runtime.secrets import redact_events
from events.base import Event
from events.effects import LlmCompleted, LlmFailed, LlmRequested
from events.store import EventStore


class ToolContext:
    def __init__(
        self,
        *,
        run_id: str,
        tool: str,
        store_url: str = "memory://",
        settings: Any = None,
        provider: Any = None,
        embedder: Any = None,
        ledger: Any = None,
    ) -> None:
        self.run_id = run_id
        self.tool = tool
        self.store_url = store_url
        self.settings = settings
        self.ledger = ledger  # the run's budget (`actors.runtime.ledger`); None: unlimited
        self._provider = provider
        self._embedder = embedder
        self._store: Any = None
        self._lock = threading.Lock()
        self._recorded: dict[str, list[list[Event]]] | None = None  # by request hash, in call order
        self._served: dict[str, int] = {}  # how many of each this life has used

    @classmethod
    def local(cls, provider: Any = None, embedder: Any = None, tool: str = "tool", ledger: Any = None) -> ToolContext:
        return cls(run_id="local", tool=tool, provider=provider, embedder=embedder, ledger=ledger)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_store"] = None
        state["_lock"] = None
        state["_recorded"] = None
        state["_served"] = {}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.__dict__.setdefault("ledger", None)
        self._lock = threading.Lock()
        self._recorded = None
        self._served = {}

    @property
    def stream_id(self) -> str:
        return f"tool:{self.tool}:{self.run_id}"

    @property
    def store(self) -> Any:
        if self._store is None:
            self._store = EventStore(self.store_url)
        return self._store

    @property
    def provider(self) -> Any:
        if self._provider is None:
            if self.settings is None:
                raise LookupError(f"tool {self.tool} has no LLM configured")
            self._provider = provider_from_settings(self.settings)
        return self._provider

    @property
    def embedder(self) -> Any:
        if self._embedder is None:
            if self.settings is None:
                self._embedder = Registry.get_embedder("minilm")
            else:
                self._embedder = embedder_from_settings(self.settings)
        return self._embedder

    def complete(self, request: LlmRequest) -> LlmResult:
        """One model call, recorded (request, then completion or failure) in this tool's stream.
        Raises `LlmError` when the call failed; the failure is recorded too. A call this
        tool's stream already holds (a tool re-run after a crash) is served from it, not
        made again; a call the run's budget cannot cover raises `BudgetExhausted`, unsent."""
        result = self.complete_many([request], parallel=False)[0]
        if isinstance(result, LlmError):
            raise result
        return result

    def complete_many(self, requests: list[LlmRequest], *, parallel: bool = True) -> list[LlmResult | LlmError]:
        """Several independent calls at once (the map step of map-reduce): in parallel on Ray
        workers when Ray is up, on threads otherwise. Each is reserved on the run's budget
        before any is sent, so parallel calls cannot overshoot it together; one it cannot
        cover comes back as `BudgetExhausted`, unsent. All calls made are recorded, in request
        order, before any result is returned; a failed call comes back as its `LlmError`."""
        if not requests:
            return []
        with self._lock:
            results: list[Any] = [self._serve_recorded(r) for r in requests]
        holds: dict[int, int] = {}
        for i, request in enumerate(requests):
            if results[i] is not None or self.ledger is None:
                continue
            try:
                holds[i] = self.ledger.reserve(estimate_tokens(request))
            except BudgetExhausted as e:
                results[i] = e
        todo = [i for i, r in enumerate(results) if r is None]
        outcomes: dict[int, Any] = {}
        try:
            if todo:
                made = [requests[i] for i in todo]
                done = _parallel(self.provider, made) if parallel and len(made) > 1 else [_call(self.provider, r) for r in made]
                outcomes = dict(zip(todo, done, strict=True))
                with self._lock:
                    self._record([outcomes[i] for i in todo])
        finally:
            if self.ledger is not None:
                for i, hold in holds.items():
                    outcome = outcomes.get(i)
                    self.ledger.settle(hold, usage_of(outcome.events) if outcome is not None else Usage())
        for i, outcome in outcomes.items():
            results[i] = outcome.result if outcome.result is not None else LlmError.from_info(outcome.error)
        return results

    def embed(self, texts: list[str]) -> list[list[float]]:
        return self.embedder.embed(texts)

    # -- the tool's stream: keyed by request, so a re-run serves what was recorded -------------

    def _serve_recorded(self, request: LlmRequest) -> LlmResult | LlmError | None:
        """What this tool's stream recorded for the next use (in this life) of this request,
        or None if it holds no such call. Call with the lock held."""
        if self._recorded is None:
            self._recorded = {}
            for call in _calls(self.store.read_stream(self.stream_id)):
                self._recorded.setdefault(call[0].request_hash, []).append(call)  # type: ignore[attr-defined]
            self._served = {}
        key = request.hash()
        n = self._served.get(key, 0)
        calls = self._recorded.get(key, [])
        if n >= len(calls) or len(calls[n]) < 2:
            return None
        self._served[key] = n + 1
        result = calls[n][-1]
        if isinstance(result, LlmFailed):
            return LlmError.from_info(result.error)
        assert isinstance(result, LlmCompleted)
        return LlmResult(
            content=result.content, parsed=result.parsed, prompt_tokens=result.prompt_tokens,
            completion_tokens=result.completion_tokens, latency_s=result.latency_s, model=result.model,
            cost_usd=result.cost_usd, retries=result.retries,
        )  # fmt: skip

    def _record(self, outcomes: list[Any]) -> None:
        """Append calls just made, numbered after those the stream holds. Lock held."""
        version = self.store.stream_version(self.stream_id)
        first = version // 2 + 1  # two events per call
        stamped = []
        for i, outcome in enumerate(outcomes):
            index = first + i
            events = [e.model_copy(update={"call_index": index}) for e in outcome.events]
            stamped += [e.stamp(run_id=self.run_id, command_id=f"llm:{index}") for e in events]
            key = events[0].request_hash
            assert self._recorded is not None
            self._recorded.setdefault(key, []).append(events)
            self._served[key] = self._served.get(key, 0) + 1  # this life has used it
        self.store.append(self.stream_id, redact_events(stamped), version)  # no secret value reaches the log


def _calls(events: list[Event]) -> list[list[Event]]:
    """A tool stream's calls: each request with its result (if one was recorded)."""
    calls: dict[int, list[Event]] = {}
    for e in events:
        if isinstance(e, (LlmRequested, LlmCompleted, LlmFailed)):
            calls.setdefault(e.call_index, []).append(e)
    return [c for _, c in sorted(calls.items()) if isinstance(c[0], LlmRequested)]


def _call(provider: Any, request: LlmRequest) -> Any:
    return LlmGateway(provider).call(request, 0)


def _parallel(provider: Any, requests: list[LlmRequest]) -> list[Any]:
    import ray  # lazily: tools in tests and evaluations run without Ray

    if ray.is_initialized():
        task = ray.remote(num_cpus=0, max_retries=1)(_call)
        return ray.get([task.remote(provider, r) for r in requests])
    with ThreadPoolExecutor(max_workers=min(8, len(requests))) as pool:
        return list(pool.map(lambda r: _call(provider, r), requests))
