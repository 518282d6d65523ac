"""Bearer-token auth for the HTTP control plane: three scopes, read < operate < admin.

Tokens come from the `tokens=` argument of `create_app`, else from env `CHORUS_API_TOKENS`
(`tok=scope,tok2=scope`), else from the file named by `CHORUS_API_TOKENS_FILE` (one
`token=scope` or `name:token=scope` per line; `#` starts a comment). With no tokens
configured access is open and every request is `Principal("anonymous", "admin")`.

`require(scope)` is the FastAPI dependency every route uses: 401 for a missing or unknown
token, 403 for a token without the scope. GET routes also accept `?access_token=TOKEN`
(the browser's EventSource cannot send headers).
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Callable, Mapping
from pathlib import Path

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict

SCOPES: tuple[str, ...] = ("read", "operate", "admin")
TOKENS_ENV = "CHORUS_API_TOKENS"
TOKENS_FILE_ENV = "CHORUS_API_TOKENS_FILE"


class AuthConfigError(ValueError):
    """A token list that cannot be read; the message says which entry and why."""


class Principal(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    scope: str


ANONYMOUS = Principal(name="anonymous", scope="admin")


def allows(have: str, need: str) -> bool:
    """True when scope `have` includes scope `need` (read < operate < admin)."""
    if need not in SCOPES:
        raise ValueError(f"unknown scope {need!r}: use one of {', '.join(SCOPES)}")
    return have in SCOPES and SCOPES.index(have) >= SCOPES.index(need)


def default_name(token: str) -> str:
    return f"token:{token[:4]}…"


def parse_entry(entry: str, where: str = "token entry") -> tuple[str, Principal]:
    """`token=scope` or `name:token=scope` -> (token, Principal)."""
    left, sep, scope = entry.strip().rpartition("=")
    scope = scope.strip()
    if not sep or not left.strip():
        raise AuthConfigError(f"{where}: expected token=scope, got {entry.strip()!r}")
    if scope not in SCOPES:
        raise AuthConfigError(f"{where}: unknown scope {scope!r} (use one of {', '.join(SCOPES)})")
    name, colon, token = left.strip().partition(":")
    if not colon:
        name, token = "", name
    token = token.strip()
    if not token:
        raise AuthConfigError(f"{where}: empty token in {entry.strip()!r}")
    return token, Principal(name=name.strip() or default_name(token), scope=scope)


def parse_tokens(text: str, *, separator: str = ",", source: str = TOKENS_ENV) -> dict[str, Principal]:
    table: dict[str, Principal] = {}
    for n, raw in enumerate(text.split(separator), start=1):
        entry = raw.split("#", 1)[0].strip() if separator == "\n" else raw.strip()
        if not entry:
            continue
        token, principal = parse_entry(entry, f"{source} entry {n}")
        table[token] = principal
    return table


def load_tokens(env: Mapping[str, str] | None = None) -> dict[str, Principal]:
    """The token table the environment configures (empty: auth is open)."""
    env = os.environ if env is None else env
    if env.get(TOKENS_ENV, "").strip():
        return parse_tokens(env[TOKENS_ENV])
    path = env.get(TOKENS_FILE_ENV, "").strip()
    if path:
        try:
            text = Path(path).expanduser().read_text()
        except OSError as e:
            raise AuthConfigError(f"{TOKENS_FILE_ENV}={path}: cannot read it ({e.strerror or e})") from e
        return parse_tokens(text, separator="\n", source=path)
    return {}


def token_table(tokens: object = None) -> dict[str, Principal]:
    """Normalise the `tokens=` argument of create_app: None (read the env), a string in the
    env format, or a mapping token -> scope or token -> Principal."""
    if tokens is None:
        return load_tokens()
    if isinstance(tokens, str):
        return parse_tokens(tokens)
    if isinstance(tokens, Mapping):
        table: dict[str, Principal] = {}
        for token, value in tokens.items():
            if isinstance(value, Principal):
                if value.scope not in SCOPES:
                    raise AuthConfigError(f"token {default_name(token)}: unknown scope {value.scope!r}")
                table[token] = value
            else:
                table.update(dict([parse_entry(f"{token}={value}")]))
        return table
    raise AuthConfigError(f"tokens must be a mapping or a 'tok=scope,...' string, not {type(tokens).__name__}")


def _app_tokens(request: Request) -> dict[str, Principal]:
    table = getattr(request.app.state, "chorus_tokens", None)
    if table is None:  # a router mounted on an app that create_app did not build
        table = load_tokens()
        request.app.state.chorus_tokens = table
    return table


def auth_is_open(request: Request) -> bool:
    return not _app_tokens(request)


def lookup(table: Mapping[str, Principal], token: str) -> Principal | None:
    found = None
    for known, principal in table.items():
        if hmac.compare_digest(known.encode(), token.encode()):
            found = principal
    return found


_bearer = HTTPBearer(auto_error=False, description="a token from CHORUS_API_TOKENS")


def require(scope: str) -> Callable[..., Principal]:
    """A FastAPI dependency yielding the request's Principal, which must hold `scope`."""
    if scope not in SCOPES:
        raise ValueError(f"unknown scope {scope!r}: use one of {', '.join(SCOPES)}")

    def dependency(
        request: Request, credentials: HTTPAuthorizationCredentials | None = Depends(_bearer)
    ) -> Principal:
        table = _app_tokens(request)
        if not table:
            return ANONYMOUS
        token = credentials.credentials if credentials else None
        if token is None and request.method in ("GET", "HEAD"):
            token = request.query_params.get("access_token")
        if not token:
            raise HTTPException(401, "missing bearer token", headers={"WWW-Authenticate": "Bearer"})
        principal = lookup(table, token)
        if principal is None:
            raise HTTPException(401, "unknown bearer token", headers={"WWW-Authenticate": "Bearer"})
        if not allows(principal.scope, scope):
            raise HTTPException(403, f"this route needs scope {scope!r}; the token has {principal.scope!r}")
        return principal

    dependency.__name__ = f"require_{scope}"
    return dependency
