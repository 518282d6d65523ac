"""Signals over HTTP: deliver one to a run whose agent function waits for it
(`ctx.wait_for(name)`), as `chorus signal` and `Client.signal` do.

    POST /v1/runs/{run_id}/signals/{name}      operate  {"payload": <any JSON>}

The signal is recorded on the run's log (`SignalSent`, with the token's name as who sent it)
and the run is served again if it waits; 400 for a run that has ended or whose kind takes
no signals.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Path
from pydantic import BaseModel, Field

from actors.api.auth import Principal, require
from actors.api.errors import RUN_ERRORS
from actors.api.services import Services, acting_as, services

RunId = Path(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}$", description="a run id")
SignalName = Path(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,199}$", description="the signal's name")


class SignalIn(BaseModel):
    payload: Any = Field(None, description="the signal's payload: what ctx.wait_for returns")


class Signalled(BaseModel):
    run_id: str
    signal: str
    status: str


def build_router() -> APIRouter:
    router = APIRouter(tags=["signals"])
    operate = Depends(require("operate"))

    @router.post(
        "/runs/{run_id}/signals/{name}", response_model=Signalled, responses=RUN_ERRORS,
        summary="Send a signal to a run whose agent function waits for one; it goes on from its log",
    )  # fmt: skip
    def send(
        body: SignalIn | None = None,
        run_id: str = RunId,
        name: str = SignalName,
        who: Principal = operate,
        s: Services = Depends(services),
    ) -> Signalled:
        with acting_as(who.name):
            handle = s.client.signal(run_id, name, body.payload if body else None, sent_by=who.name)
        s.keep(handle)
        return Signalled(run_id=run_id, signal=name, status=s.client.run_state(run_id).status)

    return router
