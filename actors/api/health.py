"""`GET /v1/health`: the store, Ray, the LLM endpoint and whether auth is on. Each check
has a short timeout, so the route answers even when a part hangs."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable

import httpx  # noqa: F401  (imported now, not on the first health check's clock)
from fastapi import APIRouter, Depends

from actors.api.schemas import AuthInfo, Check, HealthOut
from actors.api.services import Services, services
from actors.runtime.client import LlmUnavailable, check_endpoint

CHECK_TIMEOUT_S = 3.0
OPEN_WARNING = "auth is OFF: no tokens configured (set CHORUS_API_TOKENS), so anyone who can reach this port is admin"


async def _check(probe: Callable[[], str], timeout: float = CHECK_TIMEOUT_S) -> Check:
    try:
        detail = await asyncio.wait_for(asyncio.to_thread(probe), timeout)
        return Check(ok=True, detail=detail)
    except asyncio.TimeoutError:
        return Check(ok=False, detail=f"no answer within {timeout:.0f}s")
    except Exception as e:  # noqa: BLE001 - a health check reports, never raises
        lines = str(e).strip().splitlines()
        return Check(ok=False, detail=lines[0] if lines else type(e).__name__)


def _store(s: Services) -> Callable[[], str]:
    def probe() -> str:
        return f"{s.store.backend}: {s.store.max_position()} events"

    return probe


def _ray() -> Check:
    if "ray" not in sys.modules:
        return Check(ok=True, detail="not started yet: it starts with the first run")
    import ray

    if not ray.is_initialized():
        return Check(ok=True, detail="not started yet: it starts with the first run")
    return Check(ok=True, detail="connected")


def _llm(s: Services) -> Callable[[], str]:
    def probe() -> str:
        client, settings = s.client, s.settings
        if client.llm is not None:
            return f"in-process provider {type(client.llm).__name__}"
        server = getattr(client, "_server", None)
        if settings.uses_embedded_llm:
            if server is None:
                return "embedded llama.cpp server: started with the first run"
            base = server.base_url
        else:
            base = settings.llm_base_url or ""
        try:
            check_endpoint(base, settings.llm_api_key, timeout_s=CHECK_TIMEOUT_S - 0.5)
        except LlmUnavailable as e:
            raise RuntimeError(f"{base} does not answer") from e
        return f"{base} answers"

    return probe


def build_router() -> APIRouter:
    router = APIRouter(tags=["health"])

    @router.get("/health", response_model=HealthOut, summary="Store, Ray, LLM endpoint, and whether auth is on")
    async def health(s: Services = Depends(services)) -> HealthOut:
        store, llm = await asyncio.gather(_check(_store(s)), _check(_llm(s)))
        enabled = s.tokens_configured > 0
        auth = AuthInfo(
            enabled=enabled,
            tokens=s.tokens_configured,
            detail=f"bearer tokens required ({s.tokens_configured} configured)" if enabled else OPEN_WARNING,
        )
        status = "ok" if store.ok and llm.ok else "degraded"
        return HealthOut(status=status, auth=auth, store=store, ray=_ray(), llm=llm)

    return router
