"""The HTTP control plane as one FastAPI app: runs of every kind, their events as JSON and
Server-Sent Events, the routes each workload adds (a RunKind's `front.api_routers`: the simulation
sessions' lanes, the relay's escalations), and the timeline page. It names no workload.

    create_app(settings=None, *, store=None, client=None, tokens=None)   # what tests build
    uvicorn actors.api.app:build --factory                               # what `chorus serve` runs
    serve run deploy/serve-api.yaml                                      # Ray Serve (actors.api.ray_serve)

OpenAPI at /v1/openapi.json, docs at /v1/docs, the page at /.

Every request passes `BodyLimit` (actors.api.limits: one size limit, before a body is read
whole); every route needs a scope (actors.api.auth); what a route shows of a run's records
goes through the principal's view (actors.api.visibility), and what a run may be given
through the server's configuration of places (actors.api.places: `ApiConfig`).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from actors.api import debug_routes, errors, health, recovery, runs, signals
from actors.api.auth import token_table
from actors.api.health import OPEN_WARNING
from actors.api.limits import BodyLimit
from actors.api.places import ApiConfig
from actors.api.services import AttributingStore, Services
from actors.runtime.client import Client
from actors.runtime.registry import Registry
from actors.runtime.settings import Settings
from events.store import EventStore

log = logging.getLogger("chorus.api")

STATIC = Path(__file__).with_name("static")
API_PREFIX = "/v1"


def create_app(
    settings: Settings | None = None,
    *,
    store: EventStore | None = None,
    client: Client | None = None,
    tokens: Any = None,
    config: ApiConfig | None = None,
) -> FastAPI:
    """The app over `client` (else a local `Client(settings)`: local Ray, the settings' store
    and model) and `store` (else the client's). `tokens`: a mapping token -> scope, a
    `tok=scope,...` string, or None to read CHORUS_API_TOKENS / CHORUS_API_TOKENS_FILE;
    an empty mapping leaves access open. `config`: the allowed folders, server options and
    body limit (else `ApiConfig.from_env`: CHORUS_API_PACK_DIRS, CHORUS_API_WORKSPACE_DIRS,
    CHORUS_API_SERVER_OPTIONS, CHORUS_API_MAX_BODY_BYTES)."""
    table = token_table(tokens)
    owns = client is None
    if client is None:
        client = Client(settings=settings or Settings.from_env())
    settings = client.settings
    if store is not None:
        current = client.store.inner if isinstance(client.store, AttributingStore) else client.store
        if current is not store:
            if owns:
                current.close()
            client.store = store
    raw = client.store.inner if isinstance(client.store, AttributingStore) else client.store
    if not isinstance(client.store, AttributingStore):
        client.store = AttributingStore(raw)  # type: ignore[assignment]
    config = config or ApiConfig.from_env(settings)
    chorus = Services(settings=settings, client=client, store=raw, tokens_configured=len(table), owns_client=owns, config=config)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if not table:
            log.warning(OPEN_WARNING)
        try:
            yield
        finally:
            chorus.close()

    app = FastAPI(
        title="Chorus",
        summary="The HTTP control plane of Chorus: runs of every workload, their events live, simulation sessions.",
        version="1",
        openapi_url=f"{API_PREFIX}/openapi.json",
        docs_url=f"{API_PREFIX}/docs",
        swagger_ui_oauth2_redirect_url=f"{API_PREFIX}/docs/oauth2-redirect",
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.chorus = chorus
    app.state.chorus_tokens = table
    app.add_middleware(BodyLimit, max_bytes=config.max_body_bytes)
    errors.install(app)
    app.include_router(health.build_router(), prefix=API_PREFIX)
    app.include_router(runs.build_router(), prefix=API_PREFIX)
    app.include_router(recovery.build_router(), prefix=API_PREFIX)
    app.include_router(signals.build_router(), prefix=API_PREFIX)
    app.include_router(debug_routes.build_router(), prefix=API_PREFIX)
    for kind in sorted(Registry.run_kinds(), key=lambda k: k.name):
        for prefix, router in kind.front.api_routers():  # a workload's own routes (its folder's api.py)
            app.include_router(router, prefix=f"{API_PREFIX}{prefix}")
    _serve_page(app)
    return app


def build() -> FastAPI:
    """The app on the environment's settings and tokens (`uvicorn actors.api.app:build --factory`,
    and each Ray Serve replica). Ray is joined (or started) now, on this thread, so the
    first run submitted does not wait for it; without Ray the read routes still work."""
    client = Client(settings=Settings.from_env())
    try:
        client.ensure_ray()
    except Exception as e:  # noqa: BLE001 - reading runs needs no Ray
        log.warning("Ray did not start (%s): runs cannot be submitted", e)
    app = create_app(client=client)
    app.state.chorus.owns_client = True
    return app


def _serve_page(app: FastAPI) -> None:
    index = STATIC / "index.html"
    if not index.is_file():
        return
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.get("/", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(index, headers={"Cache-Control": "no-cache"})
