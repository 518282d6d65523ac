"""What a tool that thinks gets from the run: the LLM gateway and the embedder, with every LLM
call recorded in the tool's own stream before its result is used (rule 2).

Some tools call a model themselves (seed 003's `semantic_file_search` writes a HyDE answer;
seed 000's RepositorySearcher summarises snippets). The agent records such a tool's *result*
(ToolCalled/ToolReturned in its own stream), so replaying the agent needs no model; the
context records the tool's *inner* calls, one stream per tool and run
(`tool:NAME:RUN_ID`), so the audit trail's LLM call log and token totals show them too.

A tool declares `uses_context = True`; the agent actor then passes `context=ToolContext(...)`
in its config. Tests and the retrieval evaluation build one over any provider and store:
`ToolContext.local(provider)` records into an in-memory store.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from actors.runtime.embeddings import embedder_from_settings
from actors.runtime.llm.gateway import LlmGateway
from actors.runtime.llm.providers import provider_from_settings
from actors.runtime.llm.types import LlmError, LlmRequest, LlmResult
from actors.runtime.registry import Registry
from actors.runtime.secrets import redact_events
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
    ) -> None:
        self.run_id = run_id
        self.tool = tool
        self.store_url = store_url
        self.settings = settings
        self._provider = provider
        self._embedder = embedder
        self._store: Any = None
        self._lock = threading.Lock()

    @classmethod
    def local(cls, provider: Any = None, embedder: Any = None, tool: str = "tool") -> ToolContext:
        return cls(run_id="local", tool=tool, provider=provider, embedder=embedder)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_store"] = None
        state["_lock"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

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
        Raises `LlmError` when the call failed; the failure is recorded too."""
        with self._lock:
            version = self.store.stream_version(self.stream_id)
            call_index = version // 2 + 1  # two events per call
            outcome = LlmGateway(self.provider).call(request, call_index)
            stamped = [e.stamp(run_id=self.run_id, command_id=f"llm:{call_index}") for e in outcome.events]
            stamped = redact_events(stamped)  # no secret value reaches the log
            self.store.append(self.stream_id, stamped, version)
        if outcome.result is None:
            assert outcome.error is not None
            raise LlmError.from_info(outcome.error)
        return outcome.result

    def complete_many(self, requests: list[LlmRequest]) -> list[LlmResult | LlmError]:
        """Several independent calls at once (the map step of map-reduce): in parallel on Ray
        workers when Ray is up, on threads otherwise. All are recorded, in request order,
        before any result is returned; a failed call comes back as its `LlmError`."""
        if not requests:
            return []
        provider = self.provider
        outcomes = _parallel(provider, requests)
        results: list[LlmResult | LlmError] = []
        with self._lock:
            version = self.store.stream_version(self.stream_id)
            first = version // 2 + 1
            stamped = []
            for i, outcome in enumerate(outcomes):
                index = first + i
                for e in outcome.events:
                    e = e.model_copy(update={"call_index": index})
                    stamped.append(e.stamp(run_id=self.run_id, command_id=f"llm:{index}"))
                results.append(outcome.result if outcome.result is not None else LlmError.from_info(outcome.error))
            self.store.append(self.stream_id, redact_events(stamped), version)  # no secret value reaches the log
        return results

    def embed(self, texts: list[str]) -> list[list[float]]:
        return self.embedder.embed(texts)


def _call(provider: Any, request: LlmRequest) -> Any:
    return LlmGateway(provider).call(request, 0)


def _parallel(provider: Any, requests: list[LlmRequest]) -> list[Any]:
    import ray  # lazily: tools in tests and evaluations run without Ray

    if ray.is_initialized():
        task = ray.remote(num_cpus=0, max_retries=1)(_call)
        return ray.get([task.remote(provider, r) for r in requests])
    with ThreadPoolExecutor(max_workers=min(8, len(requests))) as pool:
        return list(pool.map(lambda r: _call(provider, r), requests))
