"""The Python client over HTTP: `Client(url="http://HOST:PORT", token=...)`.

It has the local client's verbs (`submit`, `get_run`, `runs`, `events`, `cancel`, `fork`,
`run`) and its handles' (`events()`, `wait()`, `cancel()`, `result`), so a script moves
from local to remote by changing one argument:

    with Client(url="http://chorus:8000", token="o1") as chorus:
        run = chorus.submit("What does README.md say about replay?", root="/srv/repo")
        for rec in run.events():          # live over Server-Sent Events, resumed on a drop
            print(rec.event.type_name)
        print(run.wait().answer)

Events come back as the same typed `Recorded(position, event)` the local client yields.
HTTP errors become the local client's exceptions: 404 UnknownRun, 400/422 ValueError,
401/403 PermissionError, anything else RemoteError.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
from pydantic_core import to_jsonable_python

import events  # noqa: F401  (registers the event types the server sends)
from actors.runtime.import_path import is_import_path
from actors.runtime.result import RunResult
from actors.runtime.runkind import kind_of_submission
from actors.runtime.run import TERMINAL_TYPES, RunState, UnknownRun, run_stream
from events.base import ENVELOPE_FIELDS, Event
from events.errors import ErrorInfo
from events.registry import resolve
from events.runs import Budget
from events.store import Recorded

RECONNECT_LIMIT = 20  # consecutive failed reconnections (no event between) before giving up
KEEP_ALIVE_S = 15.0


class RemoteError(Exception):
    """The server answered with an error the local client has no equivalent for (5xx), or
    could not be reached."""


def decode(item: dict[str, Any]) -> Recorded:
    """One element of the events route (or an SSE `data:`) back into a typed event."""
    cls = resolve(item["type"])
    envelope = {k: item[k] for k in ENVELOPE_FIELDS if k in item}
    return Recorded(int(item["position"]), cls.model_validate({**item.get("data", {}), **envelope}))


def _raise_for(response: httpx.Response) -> None:
    if response.is_success:
        return
    try:
        detail = str(response.json().get("detail", ""))
    except Exception:  # noqa: BLE001 - a body that is not our JSON
        detail = response.text[:200]
    detail = detail or response.reason_phrase
    status = response.status_code
    if status == 404:
        raise UnknownRun(detail)
    if status in (400, 422):
        raise ValueError(detail)
    if status in (401, 403):
        raise PermissionError(f"{status}: {detail}")
    raise RemoteError(f"{response.request.method} {response.request.url.path}: {status} {detail}")


def parse_sse(lines: Iterator[str]) -> Iterator[tuple[str | None, str, str]]:
    """(id, event, data) for each Server-Sent Event in `lines`; comments are skipped."""
    ident: str | None = None
    kind, data = "message", []
    for line in lines:
        if not line:
            if data:
                yield ident, kind, "\n".join(data)
            ident, kind, data = None, "message", []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "id":
            ident = value
        elif field == "event":
            kind = value
        elif field == "data":
            data.append(value)


class RemoteRunHandle:
    def __init__(self, client: RemoteClient, run_id: str) -> None:
        self.client = client
        self.run_id = run_id

    def events(self, *, follow: bool = True, timeout: float | None = None) -> Iterator[Recorded]:
        """The run's events in global order; with `follow`, live until the run ends."""
        if not follow:
            yield from self.client.events(self.run_id)
            return
        lifecycle = run_stream(self.run_id)
        for rec in self.client.stream(self.run_id, timeout=timeout):
            yield rec
            if rec.event.stream_id == lifecycle and rec.event.type_name in TERMINAL_TYPES:
                return

    def wait(self, timeout: float | None = None) -> RunResult:
        """Block until the run ends; returns its result as the log records it."""
        deadline = None if timeout is None else time.monotonic() + timeout
        if self.result.status not in ("completed", "failed"):
            for _ in self.events(timeout=timeout):
                pass
        result = self.result
        if result.status not in ("completed", "failed") and deadline is not None and time.monotonic() >= deadline:
            raise TimeoutError(f"run {self.run_id} still running after {timeout}s")
        return result

    def cancel(self, message: str = "the run was cancelled") -> RunResult:
        return self.client.cancel(self.run_id, message=message)

    @property
    def result(self) -> RunResult:
        return self.client.run_result(self.run_id)


class RemoteClient:
    def __init__(self, url: str, *, token: str | None = None, timeout: float = 60.0, transport: Any = None) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"url must start with http:// or https://, not {url[:40]!r}")
        self.url = url.rstrip("/")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout, transport=transport)

    def __enter__(self) -> RemoteClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self._http.request(method, f"/v1{path}", **kwargs)
        except httpx.HTTPError as e:
            raise RemoteError(f"{self.url} does not answer: {type(e).__name__}: {e}") from e
        _raise_for(response)
        return response.json()

    # -- runs ---------------------------------------------------------------------------------

    def submit(
        self,
        goal: str,
        *,
        kind: str | None = None,
        agent: Any = None,
        budget: Budget | dict[str, Any] | None = None,
        **options: Any,
    ) -> RemoteRunHandle:
        """Start a run on the server; returns at once. As `Client.submit`; the options
        (paths included) are the server's: `root` names a folder on the server, and an
        agent function is its import path (`agent="pkg.mod:name"`, importable there)."""
        kind, function = kind_of_submission(kind, agent, is_function=lambda a: callable(a) or (isinstance(a, str) and is_import_path(a)))
        if function is not None:
            if callable(function):
                raise ValueError("over HTTP an agent function goes by its import path: agent='pkg.mod:name'")
            options["function"] = function
        if options.pop("run_id", None) is not None:
            raise ValueError("a remote run's id is chosen by the server")
        if isinstance(budget, Budget):
            budget = budget.model_dump()
        body = {"kind": kind, "goal": goal, "params": to_jsonable_python(options, fallback=str), "budget": budget}
        return RemoteRunHandle(self, self._call("POST", "/runs", json=body)["run_id"])

    def run(self, goal: str, **kwargs: Any) -> RunResult:
        return self.submit(goal, **kwargs).wait()

    def get_run(self, run_id: str) -> RemoteRunHandle:
        self.run_state(run_id)
        return RemoteRunHandle(self, run_id)

    def _detail(self, run_id: str) -> dict[str, Any]:
        return self._call("GET", f"/runs/{run_id}")

    def run_state(self, run_id: str) -> RunState:
        d = self._detail(run_id)
        return RunState(
            status=d["status"], goal=d["goal"], kind=d["kind"], params=d["params"], budget=d["budget"],
            lead_stream=d["lead_stream"], result=d["result"], error=d["error"], forked_from=d["forked_from"],
        )  # fmt: skip

    def run_result(self, run_id: str) -> RunResult:
        d = self._detail(run_id)
        error = ErrorInfo.model_validate(d["error"]) if d["error"] else None
        return RunResult(run_id, d["status"], d["result"], error)

    def runs(self, limit: int | None = None, *, kind: str | None = None, status: str | None = None) -> list[dict[str, Any]]:
        params = {k: v for k, v in {"limit": limit or 1000, "kind": kind, "status": status}.items() if v is not None}
        return self._call("GET", "/runs", params=params)["runs"]

    def events(self, run_id: str, after: int = 0) -> list[Recorded]:
        out: list[Recorded] = []
        while True:
            page = self._call("GET", f"/runs/{run_id}/events", params={"after": after, "limit": 10_000})
            out.extend(decode(item) for item in page["events"])
            if not page["events"]:
                return out
            after = page["last_position"]

    def stream(self, run_id: str, after: int = 0, *, timeout: float | None = None) -> Iterator[Recorded]:
        """The run's events after `after`, live (Server-Sent Events), forever or until
        `timeout`; a dropped connection is resumed from the last event received."""
        deadline = None if timeout is None else time.monotonic() + timeout
        position, failures = after, 0
        while deadline is None or time.monotonic() < deadline:
            left = None if deadline is None else max(0.05, deadline - time.monotonic())
            read = KEEP_ALIVE_S * 2 if left is None else min(KEEP_ALIVE_S * 2, left)
            headers = {"Last-Event-ID": str(position), "Accept": "text/event-stream"}
            try:
                with self._http.stream(
                    "GET", f"/v1/runs/{run_id}/events/stream", headers=headers,
                    timeout=httpx.Timeout(10.0, read=read),
                ) as response:  # fmt: skip
                    if not response.is_success:
                        response.read()
                        _raise_for(response)
                    for ident, _, data in parse_sse(response.iter_lines()):
                        rec = decode(json.loads(data))
                        if rec.position <= position:
                            continue
                        position, failures = rec.position, 0
                        yield rec
                        if deadline is not None and time.monotonic() >= deadline:
                            return
            except httpx.ReadTimeout:
                if deadline is not None and time.monotonic() >= deadline:
                    return
            except httpx.TransportError as e:
                failures += 1
                if failures > RECONNECT_LIMIT:
                    raise RemoteError(f"lost the event stream of run {run_id}: {type(e).__name__}: {e}") from e
                time.sleep(min(2.0, 0.05 * failures))

    def cancel(self, run_id: str, *, message: str = "the run was cancelled", actor: Any = None) -> RunResult:
        d = self._call("POST", f"/runs/{run_id}/cancel", json={"reason": message})
        error = ErrorInfo.model_validate(d["error"]) if d["error"] else None
        return RunResult(d["run_id"], d["status"], d["result"], error)

    def fork(
        self, run_id: str, at: int, *, model: str | None = None, llm_params: dict[str, Any] | None = None
    ) -> RemoteRunHandle:
        extra = set(llm_params or {}) - {"temperature", "max_tokens"}
        if extra:
            raise ValueError(f"a remote fork takes a model and a temperature only, not {', '.join(sorted(extra))}")
        body = {"at": at, "model": model, "temperature": (llm_params or {}).get("temperature")}
        return RemoteRunHandle(self, self._call("POST", f"/runs/{run_id}/fork", json=body)["run_id"])

    def health(self) -> dict[str, Any]:
        return self._call("GET", "/health")


__all__ = ["Event", "RemoteClient", "RemoteError", "RemoteRunHandle", "decode", "parse_sse"]
