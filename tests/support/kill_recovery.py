"""Support for the crash-recovery tests (tests/integration/test_kill_recovery.py): a scripted
model served over HTTP that counts what it served, stateless scripts for every workload, and
a killer that SIGKILLs a run's Ray actors (its lead, its tools, its ledger) at seeded points.

The endpoint is the one door every process of the run reaches (the lead, its tool actors,
the map workers), so what it counts is every request made, across processes: a test compares
it with the calls the log records. It also answers `/v1/embeddings` with a hash of the text,
so research and code-question tools index and search without loading a model.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from actors.runtime.llm.types import LlmRequest
from tests.support import codeqa_llm, fake_llm, fake_research
from tests.support.task_scripts import verdict

EMBEDDING_DIM = 32


def request_key(messages: list[dict[str, Any]]) -> str:
    """What identifies a request, the same on the wire and in `LlmRequested.messages`."""
    return json.dumps([{"role": m.get("role"), "content": m.get("content")} for m in messages], sort_keys=True)


def hashed_embedding(text: str) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    return [(b - 127.5) / 127.5 for b in digest[:EMBEDDING_DIM]]


class CountingEndpoint:
    """An OpenAI-compatible chat (and embeddings) endpoint answering with `mind(request)`
    after `delay_s`; `served` lists (request key, time received) for every chat request."""

    def __init__(self, mind: Callable[[LlmRequest], str], delay_s: float = 0.0) -> None:
        self.mind = mind
        self.delay_s = delay_s
        self.served: list[tuple[str, float]] = []
        self._lock = threading.Lock()
        self.url = ""

    def counts(self) -> Counter[str]:
        with self._lock:
            return Counter(key for key, _ in self.served)

    def times(self, key: str) -> list[float]:
        with self._lock:
            return sorted(t for k, t in self.served if k == key)

    @contextmanager
    def serving(self) -> Iterator[CountingEndpoint]:
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # /v1/models: the endpoint check
                self._send({"object": "list", "data": [{"id": "scripted", "object": "model"}]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                if self.path.endswith("/embeddings"):
                    texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                    data = [{"object": "embedding", "index": i, "embedding": hashed_embedding(str(t))} for i, t in enumerate(texts)]
                    self._send({"object": "list", "data": data, "model": body.get("model", ""),
                                "usage": {"prompt_tokens": 1, "total_tokens": 1}})  # fmt: skip
                    return
                fmt = body.get("response_format") or {}
                schema = fmt.get("schema") or (fmt.get("json_schema") or {}).get("schema")
                request = LlmRequest(model=body.get("model", ""), messages=body["messages"], response_schema=schema)
                received = time.time()  # a kill after this is one during the call
                if endpoint.delay_s:
                    time.sleep(endpoint.delay_s)
                content = endpoint.mind(request)
                with endpoint._lock:
                    endpoint.served.append((request_key(body["messages"]), received))
                self._send({
                    "id": "x", "object": "chat.completion", "created": 0, "model": body.get("model", "scripted"),
                    "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                })  # fmt: skip

            def _send(self, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        server = _QuietServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
        thread.start()
        self.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        try:
            yield self
        finally:
            server.shutdown()
            server.server_close()


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """A caller killed mid-call leaves a broken pipe: that is the test, not an error."""
        import sys

        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


# -- stateless scripts: each reply follows from the request alone ------------------------------------


def reader(request: LlmRequest) -> str:
    """fake_llm's slow reader without its sleep (the endpoint's delay stands in for it)."""
    n = fake_llm.step_of(request)
    if n <= 8:
        return fake_llm._step(f"Read line {n}.", "read_file", path="notes.txt", start_line=n, end_line=n)
    return fake_llm._step("Done.", "answer", answer="Read line by line, the notes give the marker ALPHA-7.", **fake_llm.QUOTE)


_FEEDBACK = re.compile(r"Feedback on your previous draft: feedback (\d+)")
_DRAFT = re.compile(r"Draft (\d+)\.")
ACCEPT_ON = 4  # the evaluator accepts the 4th draft: 8 model calls per workflow


def director_evaluator(request: LlmRequest) -> str:
    """The director writes "Draft N" (N: one more than the feedback it got); the evaluator
    rejects drafts until number ACCEPT_ON."""
    prompt = str(request.messages[-1].get("content", ""))
    if "Write the draft now." in prompt:
        found = _FEEDBACK.search(prompt)
        return f"Draft {int(found.group(1)) + 1 if found else 1}."
    n = int(_DRAFT.findall(prompt)[-1])
    return verdict(n >= ACCEPT_ON, f"feedback {n}")


MINDS: dict[str, Callable[[LlmRequest], str]] = {
    "react": reader,
    "researcher": fake_research.researcher,
    "orchestrator": codeqa_llm.orchestrator,
    "task": director_evaluator,
}


# -- the killer ----------------------------------------------------------------------------------------


def actor_table() -> list[dict[str, Any]]:
    """Every actor the GCS knows (no dashboard needed)."""
    from ray._private import state

    return list(state.actors().values())


@dataclass
class Kill:
    run_id: str
    target: str  # "lead", "tool:CLASS", "ledger"
    at_events: int  # how many events the run's log held when it was killed
    time: float


@dataclass
class Killer:
    """Kills a run's actors with SIGKILL at points chosen by `rng`: after a random number of
    new events in the run's log, one of its live actors (lead, tool actors it owns, the run's
    ledger actor), each at most `per_actor` times (Ray restarts each at most 3 times)."""

    rng: Any
    store: Any
    per_actor: int = 2
    kills: list[Kill] = field(default_factory=list)

    def run_actors(self, run_id: str, lead_name: str) -> list[tuple[str, dict[str, Any]]]:
        """(label, info) of the run's live actors: its lead, the actors the lead owns, its ledger."""
        table = [a for a in actor_table() if a.get("State") == "ALIVE"]
        lead = next((a for a in table if a.get("Name") == lead_name), None)
        if lead is None:
            return []
        found = [("lead", lead)]
        port = (lead.get("Address") or {}).get("Port")
        for a in table:
            if a is lead:
                continue
            if a.get("Name") == f"chorus-ledger:{run_id}":
                found.append(("ledger", a))
            elif port and (a.get("OwnerAddress") or {}).get("Port") == port:
                found.append((f"tool:{a.get('ActorClassName')}", a))
        return found

    def events_of(self, run_id: str) -> int:
        return sum(1 for _ in self.store.read_all(run_id=run_id))

    def kill_during(self, run_id: str, lead_name: str, n: int, done: Callable[[], bool], spread: int = 8) -> int:
        """Up to `n` kills while the run goes on; returns how many were made."""
        made = 0
        restarts: Counter[str] = Counter()  # by actor id
        while made < n and not done():
            target = self.events_of(run_id) + self.rng.randint(1, spread)
            while not done() and self.events_of(run_id) < target:
                time.sleep(0.02)
            if done():
                break
            actors = [(label, a) for label, a in self.run_actors(run_id, lead_name) if restarts[a["ActorID"]] < self.per_actor]
            if not actors:
                time.sleep(0.1)
                continue
            label, info = actors[self.rng.randrange(len(actors))]
            at = self.events_of(run_id)
            try:
                os.kill(int(info["Pid"]), signal.SIGKILL)  # a worker of this test's Ray
            except ProcessLookupError:
                continue
            restarts[info["ActorID"]] += 1
            self.kills.append(Kill(run_id, label, at, time.time()))
            made += 1
            self._wait_restarted(info["ActorID"], done)
        return made

    def _wait_restarted(self, actor_id: str, done: Callable[[], bool], timeout_s: float = 60.0) -> None:
        """Until the killed actor is alive again, dead for good, or the run is over."""
        from ray._private import state

        deadline = time.monotonic() + timeout_s
        time.sleep(0.2)
        while time.monotonic() < deadline and not done():
            info = state.actors(actor_id) or {}
            if info.get("State") in ("ALIVE", "DEAD"):
                return
            time.sleep(0.1)
