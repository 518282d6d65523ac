"""Runs over HTTP, for every registered run kind: submit, list, read, events (JSON and
SSE), cancel, fork, the replay verdict, the LLM call log, an actor's state, a diff.

Every route calls what `chorus` and `Client` call (the runtime client, the runs and audit
views, replay); none reimplements a workload. What a route shows of a run's records goes
through the principal's `View` (actors.api.visibility: what a kind declares admin-only is
redacted below admin); what `submit` takes goes through `check_submission`
(actors.api.places: no server-only option, places only inside allowed folders).
"""

from __future__ import annotations

import itertools
import re
from datetime import UTC, datetime
from typing import Literal

from fastapi import APIRouter, Body, Depends, Header, Path, Query, Request, Response
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from actors.api.auth import Principal, allows, require
from actors.api.errors import BAD_INPUT, COMMON_ERRORS, RUN_ERRORS, UNAVAILABLE
from actors.api.live import LiveLog, page_reader, stream_run
from actors.api.places import check_submission, remove_empty
from actors.api.schemas import (
    ID_PATTERN,
    CancelIn,
    DiffOut,
    DivergenceOut,
    EventBrief,
    EventsPage,
    ForkIn,
    JsonBytes,
    LlmLog,
    OpenCall,
    OpenCalls,
    ReplayOut,
    RunDetail,
    RunOutcome,
    RunsPage,
    StateOut,
    SubmitIn,
    Submitted,
    json_bytes,
    sse_frame,
)
from actors.api.services import REQUESTED_BY, Services, acting_as, services
from actors.api.visibility import View
from actors.runtime.client import DEFAULT_LLM_PARAMS, RunResult, new_run_id
from actors.runtime.llm.call_progress import notes_dir, read_note
from actors.runtime.registry import Registry
from actors.runtime.replay import diff_runs, replay_run, state_at
from actors.runtime.replay.report import Divergence
from actors.runtime.replay.state import UnknownStream
from events.base import Event
from events.effects import LlmRequested
from projections.audit_query import AuditTrail
from projections.runs import STATUSES, RunsView

RunId = Path(pattern=ID_PATTERN, description="a run id")


def build_router() -> APIRouter:
    router = APIRouter(tags=["runs"])
    read, operate = Depends(require("read")), Depends(require("operate"))

    @router.post(
        "/runs", status_code=202, response_model=Submitted,
        responses={**COMMON_ERRORS, **BAD_INPUT, **UNAVAILABLE},
        summary="Submit a run of any registered kind; 202 at once, the run proceeds in the background",
    )  # fmt: skip
    def submit(
        body: SubmitIn, response: Response, who: Principal = operate, s: Services = Depends(services)
    ) -> Submitted:
        name = kind_named(body.kind, body.agent)
        if body.agent is not None:
            response.headers["Deprecation"] = "true"
            response.headers["Warning"] = f'299 - "agent is deprecated (until 0.2.0): send kind={body.agent!r}"'
        kind = Registry.run_kind(name) if name else Registry.default_run_kind()
        run_id = new_run_id()
        goal, params, made = check_submission(
            kind, body.goal, body.params, s.config, run_id, admin=allows(who.scope, "admin")
        )
        try:
            with acting_as(who.name):
                handle = s.client.submit(goal, kind=kind.name, budget=body.budget, run_id=run_id, **params)
        except BaseException:
            remove_empty(made)
            raise
        s.keep(handle)
        return Submitted(run_id=handle.run_id, kind=kind.name, status=s.client.run_state(handle.run_id).status)

    @router.get("/runs", response_model=RunsPage, responses=COMMON_ERRORS, summary="Runs, newest first")
    def list_runs(
        kind: str | None = Query(None, description="only runs of this kind"),
        status: Literal[STATUSES] | None = Query(None),  # type: ignore[valid-type]
        limit: int = Query(50, ge=1, le=1000),
        offset: int = Query(0, ge=0),
        _: Principal = read,
        s: Services = Depends(services),
    ) -> RunsPage:
        rows = RunsView.open(s.store).list(None, status=status, kind=kind)
        return RunsPage.model_validate({"runs": rows[offset : offset + limit], "total": len(rows)})

    @router.get("/runs/{run_id}", response_model=RunDetail, responses=RUN_ERRORS, summary="One run")
    def get_run(run_id: str = RunId, _: Principal = read, s: Services = Depends(services)) -> RunDetail:
        state = s.client.run_state(run_id)
        row = RunsView.open(s.store).get(run_id) or {}
        return RunDetail(
            run_id=run_id,
            status=state.status,
            goal=state.goal,
            kind=state.kind,
            params=state.params,
            budget=state.budget,
            lead_stream=state.lead_stream,
            result=state.result,
            error=state.error.model_dump(mode="json") if state.error else None,
            forked_from=state.forked_from,
            requested_by=state.params.get(REQUESTED_BY),
            submitted_at=row.get("submitted_at"),
            ended_at=row.get("ended_at"),
            waiting_for=state.waiting_for,
            wake_at=state.wake_at,
        )

    @router.get(
        "/runs/{run_id}/events", response_model=EventsPage, response_class=JsonBytes, responses=RUN_ERRORS,
        summary="A run's events in global order, after a position",
    )  # fmt: skip
    def events(
        run_id: str = RunId,
        after: int = Query(0, ge=0, description="only events after this global position"),
        limit: int = Query(1000, ge=1, le=10_000),
        who: Principal = read,
        s: Services = Depends(services),
    ) -> JsonBytes:
        start = max(after + 1, s.first_position(run_id))  # UnknownRun: 404
        view = View.of(who)
        page = [view.event(rec) for rec in itertools.islice(s.store.read_all(start, run_id=run_id), limit)]
        return JsonBytes(json_bytes({"events": page, "last_position": page[-1]["position"] if page else after}))

    @router.get(
        "/runs/{run_id}/events/stream", responses={**RUN_ERRORS, 200: {"content": {"text/event-stream": {}},
        "description": "Server-Sent Events: `id:` the global position, `event:` the type, `data:` the event's JSON"}},
        summary="A run's events as Server-Sent Events, live; resume with Last-Event-ID or ?after=",
    )  # fmt: skip
    async def stream(
        request: Request,
        run_id: str = RunId,
        after: int = Query(0, ge=0, description="start after this global position"),
        last_event_id: str | None = Header(None, description="the last `id:` received: resume after it"),
        who: Principal = read,
        s: Services = Depends(services),
    ) -> StreamingResponse:
        first = await run_in_threadpool(s.first_position, run_id)  # UnknownRun: 404 before the stream starts
        if last_event_id is not None and last_event_id.strip():
            try:
                after = max(0, int(last_event_id.strip()))
            except ValueError:
                raise ValueError(f"Last-Event-ID must be a log position (an integer), not {last_event_id[:40]!r}") from None
        live, view = _live(s), View.of(who)
        frames = stream_run(
            live, run_id, max(after, first - 1), page_reader(s.store, run_id, view.frame), s.keep_alive_s,
            frame=view.frame, view=view.key,
        )  # fmt: skip
        headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        return StreamingResponse(frames, media_type="text/event-stream", headers=headers)

    @router.post(
        "/runs/{run_id}/cancel", response_model=RunOutcome, responses=RUN_ERRORS,
        summary="Stop a run: recorded as failed (`cancelled`, naming who), its actors stopped",
    )  # fmt: skip
    def cancel(
        run_id: str = RunId,
        body: CancelIn | None = Body(None),
        who: Principal = operate,
        s: Services = Depends(services),
    ) -> RunOutcome:
        message = f"cancelled by {who.name} over HTTP" + (f": {body.reason}" if body and body.reason else "")
        handle = s.handles.get(run_id)
        result = handle.cancel(message=message) if handle is not None else s.client.cancel(run_id, message=message)
        return _outcome(result)

    @router.post(
        "/runs/{run_id}/fork", status_code=202, response_model=Submitted,
        responses={**RUN_ERRORS, **BAD_INPUT, **UNAVAILABLE},
        summary="A new run from this one as it was at a position, continued live",
    )  # fmt: skip
    def fork(run_id: str = RunId, body: ForkIn = Body(...), who: Principal = operate, s: Services = Depends(services)) -> Submitted:
        params = None if body.temperature is None else {**DEFAULT_LLM_PARAMS, "temperature": body.temperature}
        with acting_as(who.name):
            handle = s.client.fork(run_id, body.at, model=body.model, llm_params=params)
        s.keep(handle)
        state = s.client.run_state(handle.run_id)
        return Submitted(run_id=handle.run_id, kind=state.kind, status=state.status, forked_from=state.forked_from)

    @router.get(
        "/runs/{run_id}/replay", response_model=ReplayOut, responses=RUN_ERRORS,
        summary="The replay verdict: re-execute the run from its log (no model, no tools)",
    )  # fmt: skip
    def replay(run_id: str = RunId, who: Principal = read, s: Services = Depends(services)) -> ReplayOut:
        s.client.run_state(run_id)
        report = replay_run(s.store, run_id)
        d, view = report.divergence, View.of(who)
        return ReplayOut(
            run_id=run_id, ok=report.ok, events=report.events, streams=report.streams,
            llm_calls=report.llm_calls, tool_calls=report.tool_calls,
            original_s=report.original_s, replay_s=report.replay_s, notes=report.notes,
            divergence=None if d is None else DivergenceOut(
                stream_id=d.stream_id, version=d.version, reason=d.reason, description=_described(d, view)
            ),
        )  # fmt: skip

    @router.get("/runs/{run_id}/llm", response_model=LlmLog, responses=RUN_ERRORS, summary="The LLM call log and usage")
    def llm(run_id: str = RunId, who: Principal = read, s: Services = Depends(services)) -> LlmLog:
        s.client.run_state(run_id)
        trail = AuditTrail.open(s.store)
        usage = trail.usage_by_run(run_id)
        view = View.of(who)
        return LlmLog(
            run_id=run_id,
            calls=[view.llm_call(c) for c in trail.llm_calls(run_id=run_id)],
            usage=usage[0] if usage else None,
            by_actor=trail.usage_by_actor(run_id),
        )

    @router.get(
        "/runs/{run_id}/llm/open", response_model=OpenCalls, responses=RUN_ERRORS,
        summary="The run's LLM calls still open, with the tokens streamed so far (as `chorus run` prints them)",
    )  # fmt: skip
    def llm_open(run_id: str = RunId, _: Principal = read, s: Services = Depends(services)) -> OpenCalls:
        state = s.client.run_state(run_id)
        if state.status in ("completed", "failed"):
            return OpenCalls(run_id=run_id, calls=[])
        return OpenCalls(run_id=run_id, calls=_open_calls(s, run_id))

    @router.get(
        "/runs/{run_id}/state", response_model=StateOut, responses=RUN_ERRORS,
        summary="An actor's state at a version (as `chorus state --at` shows it)",
    )  # fmt: skip
    def state(
        run_id: str = RunId,
        stream: str = Query(..., min_length=1, max_length=300, description="a stream of the run, e.g. agent:RUN_ID"),
        at: int | None = Query(None, ge=1, description="the stream version; its latest when left out"),
        who: Principal = read,
        s: Services = Depends(services),
    ) -> StateOut:
        s.client.run_state(run_id)
        first = s.store.read_stream(stream, 1, 1)
        if not first or first[0].run_id != run_id:
            raise UnknownStream(f"run {run_id} has no stream {stream!r}")
        version, value = state_at(s.store, stream, at)
        return StateOut(stream=stream, version=version, state=View.of(who).state(stream, value.model_dump(mode="json")))

    @router.get(
        "/diff", response_model=DiffOut, responses={**RUN_ERRORS, **BAD_INPUT},
        summary="Where two runs (e.g. a run and its fork) first differ (as `chorus diff`)",
    )  # fmt: skip
    def diff(
        a: str = Query(..., pattern=ID_PATTERN, description="a run id"),
        b: str = Query(..., pattern=ID_PATTERN, description="another run id"),
        who: Principal = read,
        s: Services = Depends(services),
    ) -> DiffOut:
        for run_id in (a, b):
            s.client.run_state(run_id)  # an unknown run is a 404 before one without events is a 400
        d, view = diff_runs(s.store, a, b), View.of(who)
        lines = d.lines()
        if view.hides(d.first_a) or view.hides(d.first_b):  # the lines show the first difference's data
            lines[1:3] = [f"  {a}: {view.show(d.first_a)}", f"  {b}: {view.show(d.first_b)}"]
        return DiffOut(
            a=a, b=b, shared=d.shared, first_a=_brief(d.first_a, view), first_b=_brief(d.first_b, view),
            end_a=d.end_a, end_b=d.end_b, lines=lines,
        )  # fmt: skip

    return router


def _live(s: Services) -> LiveLog:
    with s.lock:
        if s.live is None:
            s.live = LiveLog(s.store, sse_frame)
        return s.live


_HASH = re.compile(r"^[0-9a-f]{8,128}$")
OPEN_CALLS_MAX = 50  # a run has a few calls open at once; more is not shown


def _open_calls(s: Services, run_id: str) -> list[OpenCall]:
    """The run's calls the log shows asked and not answered, each with the provider's progress
    note (actors.runtime.llm.call_progress) when one is on this machine. The note's name is the
    request's hash from the log, and only a hash that looks like one is read."""
    asked: dict[str, tuple[int, LlmRequested]] = {}
    for rec in s.store.read_all(run_id=run_id, types=("LlmRequested", "LlmCompleted", "LlmFailed")):
        e = rec.event
        if isinstance(e, LlmRequested):
            asked[e.request_hash] = (rec.position, e)
        else:
            asked.pop(getattr(e, "request_hash", ""), None)
    folder, now = notes_dir(s.settings.data_dir), datetime.now(UTC)
    calls = []
    for request_hash, (position, asked_event) in list(asked.items())[-OPEN_CALLS_MAX:]:
        note = (read_note(folder, request_hash) if _HASH.match(request_hash) else None) or {}
        tokens, elapsed = note.get("tokens"), note.get("elapsed_s")
        if not isinstance(elapsed, int | float):  # no note: the time since the call was asked
            at = asked_event.timestamp
            elapsed = max(0.0, (now - (at if at.tzinfo else at.replace(tzinfo=UTC))).total_seconds())
        calls.append(OpenCall(
            stream_id=asked_event.stream_id, call_index=asked_event.call_index, position=position,
            tokens=tokens if isinstance(tokens, int) else None, elapsed_s=round(float(elapsed), 1),
        ))  # fmt: skip
    return calls


def _outcome(result: RunResult) -> RunOutcome:
    return RunOutcome(
        run_id=result.run_id,
        status=result.status,
        result=result.answer,
        error=result.error.model_dump(mode="json") if result.error else None,
    )


def _brief(e: Event | None, view: View) -> EventBrief | None:
    if e is None:
        return None
    return EventBrief(stream_id=e.stream_id, version=e.version, type=e.type_name, data=view.payload(e))


def _described(d: Divergence, view: View) -> str:
    """The divergence in words, as `chorus replay` prints it, with what the view may see."""
    if not (view.hides(d.expected) or view.hides(d.actual)):
        return d.describe()
    head = f"first difference at {d.stream_id}@{d.version}" + (f": {d.reason}" if d.reason else "")
    return f"{head}\n  expected: {view.show(d.expected)}\n  actual:   {view.show(d.actual)}"


def kind_named(kind: str | None, agent: str | None) -> str | None:
    """The kind a submission names: `kind`, or the deprecated `agent` (its old name).
    ValueError (a 400, nothing written) when it gives both."""
    if kind is not None and agent is not None:
        raise ValueError("give `kind` (the run's kind), not both `kind` and the deprecated `agent`")
    return kind if kind is not None else agent
