"""Recovery over HTTP: resuming a run whose actors died.

    POST /v1/runs/{run_id}/resume                                  operate

It calls what the CLI calls (`Client.resume`). The relay's escalations, which seed 004 hands
to a person, are the relay's own routes (actors.relay.api, mounted through its run kind).
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Path
from pydantic import BaseModel

from actors.api.auth import Principal, require
from actors.api.errors import RUN_ERRORS
from actors.api.services import Services, acting_as, services

RunId = Path(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}$", description="a run id")


class Resumed(BaseModel):
    run_id: str
    kind: str
    status: str


def build_router() -> APIRouter:
    router = APIRouter(tags=["recovery"])
    operate = Depends(require("operate"))

    @router.post(
        "/runs/{run_id}/resume", response_model=Resumed, responses=RUN_ERRORS,
        summary="Serve a run whose actors died again; it goes on from its log (400 for one that ended)",
    )  # fmt: skip
    def resume(run_id: str = RunId, who: Principal = operate, s: Services = Depends(services)) -> Resumed:
        with acting_as(who.name):
            handle = s.client.resume(run_id)
        s.keep(handle)
        state = s.client.run_state(run_id)
        return Resumed(run_id=run_id, kind=state.kind, status=state.status)

    return router
