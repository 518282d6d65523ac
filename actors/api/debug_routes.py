"""The routes the debugging page needs beyond the runs routes (actors/api/runs.py):

    GET /v1/runs/{run_id}/fixture     read   the run as a sealed JSON-lines replay fixture (a download);
                                             admin when any of its records is admin-only
    GET /v1/runs/{run_id}/labels      read   each event's line from the run kind's `describe`
                                             (plugins' event types included), and whether it is an error
    GET /v1/compare?a=RUN&b=RUN       read   two runs side by side at the first event where they part:
                                             aligned lead events, the state diff, the prompt diff
    POST /v1/runs/{run_id}/fork-edit  operate  a fork that continues from an LLM call whose completion or
                                             prompt a person replaced (actors.agent.fork_edit; the
                                             token's name is recorded as who edited it)

Each goes through the principal's view (actors.api.visibility) like every other route.
Actions (fork, cancel, resume, signal, replay) are the existing routes, with their scopes.
"""

from __future__ import annotations

import itertools
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Path, Query
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field, model_validator
from starlette.concurrency import run_in_threadpool

from actors.api.auth import Principal, require
from actors.api.errors import BAD_INPUT, RUN_ERRORS
from actors.api.schemas import ID_PATTERN, Submitted
from actors.api.services import Services, acting_as, services
from actors.api.visibility import View
from actors.runtime.progress import describe, is_error
from actors.runtime.client import DEFAULT_LLM_PARAMS
from actors.runtime.replay.compare import Comparison, compare_runs, message_diff, state_diff
from actors.agent.fork_edit import MAX_EDIT_CHARS, MAX_PROMPT_CHARS, MAX_PROMPT_MESSAGES, fork_with_edit
from actors.runtime.replay.fixtures import fixture_rows, sealed_text
from actors.runtime.replay.rerun import run_kind_of, run_records
from events.base import Event

RunId = Path(pattern=ID_PATTERN, description="a run id")
MAX_LABELS = 20_000


class PromptMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Literal["system", "user", "assistant", "tool"]
    content: str = Field(max_length=MAX_PROMPT_CHARS)


class ForkEditIn(BaseModel):
    """Exactly one of `completion` and `prompt`."""

    model_config = ConfigDict(extra="forbid")

    at: int = Field(ge=1, description="the global position of the LLM call (its LlmRequested or LlmCompleted)")
    completion: str | None = Field(None, min_length=1, max_length=MAX_EDIT_CHARS, description="what the model should have said")
    prompt: Annotated[list[PromptMessage], Field(min_length=1, max_length=MAX_PROMPT_MESSAGES)] | Annotated[str, Field(min_length=1, max_length=MAX_PROMPT_CHARS)] | None = Field(
        None,
        description="what the model should have been sent instead: the whole list of messages, or a text that replaces "
        "the last user message; the edited call then goes to the model live (recorded as PromptEdited)",
    )  # fmt: skip
    model: str | None = Field(None, max_length=200)
    temperature: float | None = Field(None, ge=0, le=2)

    @model_validator(mode="after")
    def one_edit(self) -> ForkEditIn:
        if (self.completion is None) == (self.prompt is None):
            raise ValueError("give either completion or prompt")
        return self


class Label(BaseModel):
    position: int
    label: str
    error: bool


class LabelsOut(BaseModel):
    run_id: str
    kind: str
    labels: list[Label]


class SideEvent(BaseModel):
    position: int | None
    stream_id: str
    version: int
    type: str
    data: dict[str, Any]


class AlignedRow(BaseModel):
    index: int = Field(
        description="the row: the index in both lead streams up to the parting; from it, a fork's mark (AgentForked, "
        "PromptEdited) has a row of its own with nothing on the other side, so the events after it line up"
    )
    same: bool
    a: SideEvent | None
    b: SideEvent | None


class StateChange(BaseModel):
    path: str
    a: Any = None
    b: Any = None
    only: str | None = Field(None, description='"a" or "b" when the field is on one side only')


class MessageChange(BaseModel):
    index: int
    status: str = Field(description="same, changed, added (only in b) or removed (only in a)")
    role: str
    a: Any = None
    b: Any = None


class CompareOut(BaseModel):
    a: str
    b: str
    kind: str
    lead_label: str
    shared: int = Field(description="leading events of the lead streams that are the same fact")
    identical: bool
    events_a: int
    events_b: int
    end_a: str
    end_b: str
    first_a: SideEvent | None
    first_b: SideEvent | None
    rows: list[AlignedRow]
    state_a: dict[str, Any] | None
    state_b: dict[str, Any] | None
    state_diff: list[StateChange]
    prompt_a: SideEvent | None
    prompt_b: SideEvent | None
    prompt_diff: list[MessageChange]


def build_router() -> APIRouter:
    router = APIRouter(tags=["debugging"])
    read, operate = Depends(require("read")), Depends(require("operate"))

    @router.post(
        "/runs/{run_id}/fork-edit", status_code=202, response_model=Submitted, responses={**RUN_ERRORS, **BAD_INPUT},
        summary="A fork that continues from an LLM call whose completion (CompletionEdited) or prompt (PromptEdited) a person replaced",
    )  # fmt: skip
    def fork_edit(body: ForkEditIn, run_id: str = RunId, who: Principal = operate, s: Services = Depends(services)) -> Submitted:
        params = None if body.temperature is None else {**DEFAULT_LLM_PARAMS, "temperature": body.temperature}
        prompt = body.prompt if body.prompt is None or isinstance(body.prompt, str) else [m.model_dump() for m in body.prompt]
        with acting_as(who.name):
            handle = fork_with_edit(
                s.client, run_id, body.at, completion=body.completion, prompt=prompt, edited_by=who.name,
                model=body.model, llm_params=params,
            )  # fmt: skip
        s.keep(handle)
        state = s.client.run_state(handle.run_id)
        return Submitted(run_id=handle.run_id, kind=state.kind, status=state.status, forked_from=state.forked_from)

    @router.get(
        "/runs/{run_id}/fixture", responses={**RUN_ERRORS, 200: {"content": {"application/x-ndjson": {}}}},
        summary="The run as a sealed JSON-lines replay fixture (as `chorus export`), for download",
    )  # fmt: skip
    async def fixture(run_id: str = RunId, who: Principal = read, s: Services = Depends(services)) -> Response:
        def build() -> str:
            s.client.run_state(run_id)  # UnknownRun: 404
            view = View.of(who)
            if not view.full and any(view.hides(r.event) for r in run_records(s.store, run_id)):
                raise HTTPException(403, f"run {run_id} holds admin-only records: exporting it needs the admin scope")
            return sealed_text(fixture_rows(s.store, run_id))

        text = await run_in_threadpool(build)
        headers = {"Content-Disposition": f'attachment; filename="{run_id}.jsonl"', "Cache-Control": "no-store"}
        return Response(text, media_type="application/x-ndjson", headers=headers)

    @router.get("/runs/{run_id}/labels", response_model=LabelsOut, responses=RUN_ERRORS, summary="Each event's line, as the run's kind describes it")
    def labels(run_id: str = RunId, who: Principal = read, s: Services = Depends(services)) -> LabelsOut:
        s.client.run_state(run_id)
        records = run_records(s.store, run_id)
        kind = run_kind_of(s.store, run_id, records)
        view = View.of(who)
        out = []
        for rec in itertools.islice(records, MAX_LABELS):
            e = rec.event
            text = e.type_name if view.hides(e) else (describe(e, brief=True, kind=kind) or e.type_name)
            out.append(Label(position=rec.position, label=text.strip()[:300], error=is_error(e, kind)))
        return LabelsOut(run_id=run_id, kind=kind.name, labels=out)

    @router.get(
        "/compare", response_model=CompareOut, responses={**RUN_ERRORS, **BAD_INPUT},
        summary="Two runs side by side at the first event where they part: aligned events, state and prompt diffs",
    )  # fmt: skip
    def compare(
        a: str = Query(..., pattern=ID_PATTERN, description="a run id (e.g. the origin)"),
        b: str = Query(..., pattern=ID_PATTERN, description="another run id (e.g. its fork)"),
        context: int = Query(5, ge=0, le=50, description="shared events shown before the parting"),
        after: int = Query(50, ge=1, le=500, description="events of each side shown from the parting"),
        who: Principal = read,
        s: Services = Depends(services),
    ) -> CompareOut:
        for run_id in (a, b):
            s.client.run_state(run_id)  # an unknown run is a 404
        c = compare_runs(s.store, a, b, context=context, after=after)
        return _compare_out(c, View.of(who))

    return router


def _side(e: Event | None, c: Comparison, view: View) -> SideEvent | None:
    if e is None:
        return None
    return SideEvent(
        position=c.positions.get(str(e.event_id)), stream_id=e.stream_id, version=e.version, type=e.type_name, data=view.payload(e)
    )


def _compare_out(c: Comparison, view: View) -> CompareOut:
    state_a = view.state(c.lead_a, c.state_a) if c.state_a is not None and c.lead_a else c.state_a
    state_b = view.state(c.lead_b, c.state_b) if c.state_b is not None and c.lead_b else c.state_b
    pa, pb = _side(c.prompt_a, c, view), _side(c.prompt_b, c, view)
    return CompareOut(
        a=c.a, b=c.b, kind=c.kind, lead_label=c.lead_label, shared=c.shared,
        identical=c.first_a is None and c.first_b is None,
        events_a=c.events_a, events_b=c.events_b, end_a=c.end_a, end_b=c.end_b,
        first_a=_side(c.first_a, c, view), first_b=_side(c.first_b, c, view),
        rows=[AlignedRow(index=r["index"], same=r["same"], a=_side(r["a"], c, view), b=_side(r["b"], c, view)) for r in c.rows],
        state_a=state_a, state_b=state_b,
        state_diff=[StateChange(**d) for d in state_diff(state_a, state_b)] if state_a is not None and state_b is not None else [],
        prompt_a=pa, prompt_b=pb,
        prompt_diff=[MessageChange(**m) for m in message_diff(pa.data.get("messages") if pa else None, pb.data.get("messages") if pb else None)],
    )  # fmt: skip
