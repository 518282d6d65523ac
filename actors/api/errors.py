"""Every error is `{"detail": "one line"}` with a 4xx (a 503 when the store or the model
endpoint is down); never a stack trace."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import JSONResponse

from actors.api.auth import AuthConfigError
from actors.api.schemas import ErrorOut
from actors.runtime.client import LlmUnavailable
from actors.runtime.llm.local_server import LocalServerError
from actors.runtime.registry import RegistryError
from actors.runtime.replay import FixtureError, UnknownStream
from actors.runtime.run import UnknownRun
from actors.runtime.settings import ConfigError
from events.store import StoreUnavailable

log = logging.getLogger("chorus.api")

ERROR = {"model": ErrorOut}
# What every route may answer besides its success (the OpenAPI document lists them).
UNAVAILABLE = {503: {**ERROR, "description": "the store, Ray or the LLM endpoint is unavailable"}}
BAD_INPUT = {400: {**ERROR, "description": "the input names something that cannot be done"}}
COMMON_ERRORS: dict[int | str, dict[str, Any]] = {
    401: {**ERROR, "description": "missing or unknown bearer token"},
    403: {**ERROR, "description": "the token lacks the route's scope"},
    422: {**ERROR, "description": "bad input (malformed JSON, wrong types)"},
    **UNAVAILABLE,
}
RUN_ERRORS: dict[int | str, dict[str, Any]] = {**COMMON_ERRORS, **BAD_INPUT, 404: {**ERROR, "description": "no such run"}}


def one_line(text: object, limit: int = 300) -> str:
    lines = str(text).strip().splitlines()
    line = lines[0].strip() if lines else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def error(status: int, detail: object, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"detail": one_line(detail) or "error"}, status_code=status, headers=headers)


def validation_detail(exc: RequestValidationError) -> str:
    errors = exc.errors()
    if not errors:
        return "invalid request"
    first = errors[0]
    where = ".".join(str(p) for p in first.get("loc", ()))
    msg = first.get("msg", "invalid")
    if first.get("type") == "json_invalid":
        return f"malformed JSON body: {first.get('ctx', {}).get('error', msg)}"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where}: {msg}{more}" if where else f"{msg}{more}"


# exception type -> status; the first match in this order wins
STATUS_OF: tuple[tuple[type[BaseException], int], ...] = (
    (UnknownRun, 404),
    (UnknownStream, 404),
    (StoreUnavailable, 503),
    (LlmUnavailable, 503),
    (LocalServerError, 503),
    (ConfigError, 503),
    (AuthConfigError, 503),
    (RegistryError, 400),
    (FixtureError, 400),
    (ValueError, 400),
    (TypeError, 400),  # an option the run kind does not take
    (TimeoutError, 504),
)


def status_of(exc: BaseException) -> int | None:
    for kind, status in STATUS_OF:
        if isinstance(exc, kind):
            return status
    return None


def install(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        return error(422, validation_detail(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return error(exc.status_code, exc.detail, getattr(exc, "headers", None))

    async def _known(request: Request, exc: Exception) -> JSONResponse:
        status = status_of(exc)
        if status is None:
            log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
            return error(500, f"internal error ({type(exc).__name__}); see the server's log")
        return error(status, exc)

    for kind, _ in STATUS_OF:
        app.add_exception_handler(kind, _known)
    app.add_exception_handler(Exception, _known)  # the last resort: one line, the trace in the log
