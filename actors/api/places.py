"""What a request may ask the server to open or run: the API's configuration of places
and server-only options, and the check every submitted run goes through.

A run kind declares in its `http` (actors.runtime.runkind.HttpPolicy) which of its options name a place on
the server (`path_options`: "packs" for a content file, "workspace" for the run's working
folder, "in workspaces" for another file or folder a run reads), which folders of the package a place includes (`bundled`), and which options
only the server's operator sets (`server_options`: a command the server runs outside any
sandbox, such as the relay's `resubmit`). Over HTTP, for every scope:

- a server option in a request is refused; the server's configuration supplies it
  (`CHORUS_API_SERVER_OPTIONS`, JSON `{"kind": {"option": value}}`);
- an admin option (a command the run executes inside the sandbox, such as the relay's
  probes) is taken from an admin token only: operate never chooses a command; likewise an
  import option (a run's tools) names code by import path only for an admin: below, it
  takes registered names;
- a place option is taken only inside the folders the configuration allows for its place
  (`CHORUS_API_PACK_DIRS`, `CHORUS_API_WORKSPACE_DIRS`; os.pathsep-separated) or a bundled
  one: a bare name or a relative path is looked up in them, an absolute path must resolve
  (symlinks followed) inside one of them. A refusal says the same whether or not the path
  exists, so a request learns nothing of the server's files;
- a "workspace" option a request leaves out is a fresh folder for the run under the first
  workspace folder (default `<data dir>/workspaces`), never the server's working directory.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from actors.runtime.import_path import is_import_path
from actors.runtime.registry import Registry
from actors.runtime.settings import Settings

PACK_DIRS_ENV = "CHORUS_API_PACK_DIRS"
WORKSPACE_DIRS_ENV = "CHORUS_API_WORKSPACE_DIRS"
SERVER_OPTIONS_ENV = "CHORUS_API_SERVER_OPTIONS"
MAX_BODY_ENV = "CHORUS_API_MAX_BODY_BYTES"
MAX_BODY_BYTES = 4 * 1024 * 1024  # a pack's YAML (1 MB of text) as JSON, with room to spare
PLACES = {"packs": PACK_DIRS_ENV, "workspaces": WORKSPACE_DIRS_ENV}
# a kind's place -> the configured folders it lies in
ROOTS = {"packs": "packs", "workspace": "workspaces", "in workspaces": "workspaces"}
PACK_SUFFIXES = (".yaml", ".yml")
MAX_PATH = 1024


class PlaceRefused(ValueError):
    """A request asked for a place or an option it may not choose (a 400, one line)."""


@dataclass(frozen=True)
class ApiConfig:
    """The server's own choices the API enforces (see the module's docstring)."""

    places: dict[str, tuple[Path, ...]] = field(default_factory=dict)
    server_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    max_body_bytes: int = MAX_BODY_BYTES

    @classmethod
    def from_env(cls, settings: Settings, env: Mapping[str, str] | None = None, **given: Any) -> ApiConfig:
        """From the environment (and `given`: `pack_dirs`, `workspace_dirs`,
        `server_options`, `max_body_bytes`, e.g. `chorus serve`'s flags, which win)."""
        env = os.environ if env is None else env
        packs = given.get("pack_dirs") or _dirs(env.get(PACK_DIRS_ENV, ""))
        workspaces = given.get("workspace_dirs") or _dirs(env.get(WORKSPACE_DIRS_ENV, "")) or [Path(settings.data_dir) / "workspaces"]
        options = given.get("server_options")
        if options is None:
            options = parse_server_options(env.get(SERVER_OPTIONS_ENV, ""))
        limit = given.get("max_body_bytes") or env.get(MAX_BODY_ENV, "").strip() or MAX_BODY_BYTES
        try:
            limit = int(limit)
        except ValueError:
            raise ValueError(f"{MAX_BODY_ENV} must be a number of bytes, not {limit!r}") from None
        if limit < 1024:
            raise ValueError(f"{MAX_BODY_ENV} must be at least 1024 bytes, not {limit}")
        return cls(
            places={"packs": tuple(Path(p) for p in packs), "workspaces": tuple(Path(p) for p in workspaces)},
            server_options=options,
            max_body_bytes=limit,
        )


def _dirs(text: str) -> list[Path]:
    return [Path(p).expanduser() for p in text.split(os.pathsep) if p.strip()]


def parse_server_options(text: str) -> dict[str, dict[str, Any]]:
    """`{"relay": {"resubmit": ["./deploy.sh"]}}` (a string command is split as a shell would)."""
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{SERVER_OPTIONS_ENV} is not JSON: {e.msg} (line {e.lineno})") from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise ValueError(f'{SERVER_OPTIONS_ENV} must be {{"kind": {{"option": value}}}}')
    return {
        str(kind): {k: shlex.split(v) if k == "resubmit" and isinstance(v, str) else v for k, v in opts.items()}
        for kind, opts in data.items()
    }


def check_submission(
    kind: Any, goal: str, params: dict[str, Any], config: ApiConfig, run_id: str, *, admin: bool = False
) -> tuple[str, dict[str, Any], list[Path]]:
    """The goal and options a request may run with: server options refused (then the
    configuration's laid on), admin options (sandboxed commands) refused below admin, every
    place option confined to its allowed folders, and a fresh folder for each "workspace"
    option left out (the folders made are returned, for the caller to remove if the run is
    refused). PlaceRefused (one line) otherwise."""
    if not goal.strip():
        raise PlaceRefused("the goal is empty")
    made: list[Path] = []
    refused = sorted(set(params) & set(kind.http.server_options))
    if refused:
        raise PlaceRefused(
            f"option {', '.join(refused)} of a {kind.name} run is set by the server's configuration "
            f"({SERVER_OPTIONS_ENV}), never by a request"
        )
    if not admin:
        _refuse_import_paths(kind, params)
    commands = sorted(set(params) & set(kind.http.admin_options))
    if commands and not admin:
        raise PlaceRefused(
            f"option {', '.join(commands)} of a {kind.name} run names a command: only an admin token may send it"
        )
    options = dict(params)
    for option, where in kind.http.path_options.items():
        place = ROOTS.get(where)
        if place is None:
            raise ValueError(f"run kind {kind.name!r} declares option {option} in an unknown place {where!r}")
        roots = (*kind.http.bundled.get(place, ()), *config.places.get(place, ()))
        if option == "goal":
            goal = confine(goal, roots, place, option)
        elif option in options and options[option] is not None:
            value = options[option]
            if isinstance(value, list | tuple):
                options[option] = [confine(v, roots, place, option) for v in value]
            elif isinstance(value, str | Path):
                options[option] = confine(str(value), roots, place, option)
            elif not isinstance(value, Mapping):  # a mapping names no file (a task's inline memory index)
                raise PlaceRefused(f"option {option} must be a name or a path inside an allowed {place} folder")
        elif where == "workspace" and option not in options:
            allowed = config.places.get("workspaces", ())
            if not allowed:
                raise PlaceRefused(f"this server allows no workspace folder ({WORKSPACE_DIRS_ENV})")
            folder = allowed[0] / run_id
            folder.mkdir(parents=True, exist_ok=True)
            made.append(folder)
            options[option] = str(folder)
    options.update(config.server_options.get(kind.name, {}))
    return goal, options, made


def _refuse_import_paths(kind: Any, params: dict[str, Any]) -> None:
    """Below admin, an import option takes registered names only: naming `pkg.mod:name`
    would make the server import (run the top level of) a module of the request's choosing."""
    registered = set(Registry.names()["tools"])
    for option in sorted(set(params) & set(kind.http.import_options)):
        values = params[option]
        for value in values if isinstance(values, list | tuple) else [values]:
            if isinstance(value, str) and value not in registered and is_import_path(value):
                raise PlaceRefused(
                    f"option {option} of a {kind.name} run names code by import path ({_clip(value)!r}): "
                    f"only an admin token may; use a registered name"
                )


def remove_empty(folders: list[Path]) -> None:
    """Remove the fresh folders of a run that was refused (when still empty)."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            pass


def confine(value: object, roots: tuple[Path, ...], place: str, option: str) -> str:
    """`value` as a path inside one of `roots` (a "packs" name may leave out `.yaml`), or
    PlaceRefused, the same words whether the path exists or not."""
    refusal = PlaceRefused(
        f"{option}: {_clip(value)!r} is not a {place[:-1]} this server allows "
        f"(bundled, or inside a folder of {PLACES.get(place, place)})"
    )
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_PATH or "\x00" in value:
        raise refusal
    real_roots = [Path(os.path.realpath(r)) for r in roots]
    given = Path(value).expanduser()
    candidates = [given] if given.is_absolute() else [r / given for r in real_roots]
    for candidate in candidates:
        tries = [candidate]
        if place == "packs" and candidate.suffix not in PACK_SUFFIXES:
            tries += [candidate.with_name(candidate.name + s) for s in PACK_SUFFIXES]
        for path in tries:
            real = Path(os.path.realpath(path))
            if not any(real == r or r in real.parents for r in real_roots):
                continue
            if place == "packs" and not real.is_file():
                continue
            if place == "workspaces" and real in real_roots:
                continue  # a workspace is a folder inside an allowed one, not the allowed folder itself
            return str(real)
    raise refusal


def _clip(value: object, limit: int = 160) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
