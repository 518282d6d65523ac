"""The relay's escalations over HTTP (seed 004 hands them to a person), mounted at `/v1` by
the relay's run kind (`RelayRun.api_routers`):

    GET  /v1/escalations?open=true                                 read
    GET  /v1/runs/{run_id}/escalations                             read
    POST /v1/runs/{run_id}/escalations/{escalation_id}/resolve     operate  {"note": "..."}

Each calls what the CLI calls (actors.relay.escalations); a resolution records the token's
name as who resolved it.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Path, Query
from pydantic import BaseModel, Field

from actors.api.auth import Principal, require
from actors.api.errors import COMMON_ERRORS, RUN_ERRORS
from actors.api.services import Services, acting_as, services
from actors.relay import escalations as relay_escalations

RunId = Path(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}$", description="a run id")
EscalationId = Path(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,255}$", description="an escalation id")


class EscalationOut(BaseModel):
    run_id: str
    escalation_id: str
    item: int = Field(description="the roadmap item, 1-based")
    title: str
    turn: int
    defect_id: str | None = None
    reason: str
    rolled_back: list[str] = Field(description="files the failed attempt had changed, back at the last checkpoint")
    raised_at: str | None = None
    resolved: bool
    resolution: str | None = None
    resolved_by: str | None = None
    resolved_at: str | None = None


class EscalationsOut(BaseModel):
    escalations: list[EscalationOut]
    total: int


class ResolveIn(BaseModel):
    note: str = Field(min_length=1, max_length=4000, description="what was done or decided")


def build_router() -> APIRouter:
    router = APIRouter(tags=["recovery"])
    read, operate = Depends(require("read")), Depends(require("operate"))

    @router.get(
        "/escalations", response_model=EscalationsOut, responses=COMMON_ERRORS,
        summary="Every relay's escalations, oldest first",
    )  # fmt: skip
    def all_escalations(
        open: bool = Query(False, description="only those nobody resolved yet"),
        _: Principal = read,
        s: Services = Depends(services),
    ) -> EscalationsOut:
        return _page(relay_escalations.escalations(s.client, None, open_only=open))

    @router.get(
        "/runs/{run_id}/escalations", response_model=EscalationsOut, responses=RUN_ERRORS,
        summary="A relay's escalations, oldest first",
    )  # fmt: skip
    def run_escalations(
        run_id: str = RunId,
        open: bool = Query(False, description="only those nobody resolved yet"),
        _: Principal = read,
        s: Services = Depends(services),
    ) -> EscalationsOut:
        return _page(relay_escalations.escalations(s.client, run_id, open_only=open))

    @router.post(
        "/runs/{run_id}/escalations/{escalation_id}/resolve", response_model=EscalationOut, responses=RUN_ERRORS,
        summary="Record that a person dealt with an escalation (EscalationResolved; once)",
    )  # fmt: skip
    def resolve(
        body: ResolveIn,
        run_id: str = RunId,
        escalation_id: str = EscalationId,
        who: Principal = operate,
        s: Services = Depends(services),
    ) -> EscalationOut:
        with acting_as(who.name):
            found = relay_escalations.resolve(s.client, run_id, escalation_id, body.note, resolved_by=who.name)
        return EscalationOut.model_validate(found)

    return router


def _page(rows: list[dict[str, Any]]) -> EscalationsOut:
    return EscalationsOut.model_validate({"escalations": rows, "total": len(rows)})
