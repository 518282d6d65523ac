"""The snapshot file format (seed 002 style): the `ActorSnapshot` document, its chain of
migrations (0.1.0 -> 0.2.0 -> 0.3.0; an old file loads through it), and where the files
of a store go. The view that writes them is `projections.snapshots`; a state at any
version, on demand, is the runtime's (`actors.runtime.replay.state.snapshot_at`)."""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlparse

from pydantic import BaseModel, ConfigDict

from events.base import State
from projections.files import write_atomically

SNAPSHOT_SCHEMA = "0.3.0"  # of the file format; bump it with a migration to it


class SnapshotFormatError(ValueError):
    """A snapshot file this code cannot read. Its message is one line for a person."""


# -- the document ------------------------------------------------------------------------


class ActorSnapshot(BaseModel):
    """One actor's state at one version of its stream (format 0.3.0)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: str = SNAPSHOT_SCHEMA
    stream: str
    version: int
    position: int | None = None  # global position of the event at `version`, when known
    timestamp: str | None = None  # that event's time (UTC ISO-8601), when known
    actor: str | None = None  # the behaviour's name: "run", "react", ...
    state_type: str | None = None  # the state model's class name
    state_schema_version: int = 1
    state: dict[str, Any]

    def to_json(self) -> str:
        return json.dumps(self.model_dump(), indent=2, ensure_ascii=False) + "\n"

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> ActorSnapshot:
        """A snapshot from its JSON document, in any known format (migrated first)."""
        try:
            return cls.model_validate(migrate(doc))
        except SnapshotFormatError:
            raise
        except Exception as e:  # pydantic's message is long: keep its first line
            raise SnapshotFormatError(f"invalid snapshot: {str(e).splitlines()[0]}") from e

    def typed_state(self, model: Any) -> State:
        """The state as its model: `model` is the state class, or a behaviour (anything
        with a `state_type`), which the caller knows (this module runs no actor code)."""
        state_type = getattr(model, "state_type", model)
        if self.state_schema_version != state_type.schema_version:
            raise SnapshotFormatError(
                f"{self.stream}@{self.version}: state stored at schema v{self.state_schema_version}, "
                f"{state_type.__name__} is at v{state_type.schema_version}"
            )
        return state_type.model_validate(self.state)  # type: ignore[no-any-return]


# -- migrations ----------------------------------------------------------------------------

Migration = Callable[[dict[str, Any]], dict[str, Any]]
_MIGRATIONS: dict[str, tuple[str, Migration]] = {}


def migration(source: str, target: str) -> Callable[[Migration], Migration]:
    """Register the transform of a snapshot document from format `source` to `target`.
    It gets a copy of the document and returns the new one (`schema_version` is set
    for it)."""
    if _version_key(target) <= _version_key(source):
        raise ValueError(f"a migration goes forward: {source} -> {target}")

    def register(fn: Migration) -> Migration:
        if source in _MIGRATIONS:
            raise ValueError(f"a migration from snapshot schema {source} exists already")
        _MIGRATIONS[source] = (target, fn)
        return fn

    return register


def migration_chain(start: str = "0.1.0") -> list[str]:
    """The formats a document at `start` passes through: ["0.1.0", "0.2.0", "0.3.0"]."""
    chain = [start]
    while chain[-1] in _MIGRATIONS:
        chain.append(_MIGRATIONS[chain[-1]][0])
    return chain


def migrate(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The document brought to SNAPSHOT_SCHEMA through the registered migrations."""
    version = doc.get("schema_version") if isinstance(doc, Mapping) else None
    if not isinstance(version, str):
        raise SnapshotFormatError("not a Chorus snapshot: it has no schema_version")
    out = dict(doc)
    while version != SNAPSHOT_SCHEMA:
        if _version_key(version) > _version_key(SNAPSHOT_SCHEMA):
            raise SnapshotFormatError(
                f"snapshot schema {version} is newer than this code's {SNAPSHOT_SCHEMA}: upgrade Chorus"
            )
        step = _MIGRATIONS.get(version)
        if step is None:
            known = ", ".join(migration_chain())
            raise SnapshotFormatError(f"no migration from snapshot schema {version} (known: {known})")
        target, fn = step
        out = fn(copy.deepcopy(out))
        out["schema_version"] = version = target
    return out


def _version_key(version: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in version.split("."))
    except ValueError:
        raise SnapshotFormatError(f"snapshot schema {version!r} is not a version like 0.3.0") from None


@migration("0.1.0", "0.2.0")
def _name_the_actor(doc: dict[str, Any]) -> dict[str, Any]:
    """0.1.0 (the first cut) held `stream_id`, `version` and `state`. 0.2.0 renames
    `stream_id` to `stream` and says which behaviour the state is of, and at which state
    schema. Every 0.1.0 agent was a ReAct agent and every state was at v1."""
    stream = doc.pop("stream_id")
    actor = "run" if stream.startswith("run:") else "react" if stream.startswith("agent:") else None
    return {"schema_version": doc.pop("schema_version"), "stream": stream, "actor": actor,
            "state_schema_version": 1, **doc}


@migration("0.2.0", "0.3.0")
def _place_in_the_log(doc: dict[str, Any]) -> dict[str, Any]:
    """0.3.0 adds where the state is in the log (`position`, `timestamp`: unknown for
    older files) and the state model's name, which the actors of 0.2.0's time fix."""
    doc.setdefault("position", None)
    doc.setdefault("timestamp", None)
    doc.setdefault("state_type", {"run": "RunState", "react": "AgentState"}.get(doc.get("actor") or ""))
    return doc


# -- files ---------------------------------------------------------------------------------


def read_snapshot(path: str | os.PathLike[str]) -> ActorSnapshot:
    """Load a snapshot file of any known format (migrated through the chain)."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise SnapshotFormatError(f"{path} is not JSON: {e}") from None
    return ActorSnapshot.from_document(doc)


def write_snapshot(path: str | os.PathLike[str], snapshot: ActorSnapshot, *, durable: bool = True) -> None:
    """Write atomically (fsync'd when `durable`): a reader sees the old file or the new one."""
    write_atomically(path, [snapshot.to_json()], durable=durable)


def stream_folder(stream_id: str) -> str:
    """A stream id as one file name: percent-encoded where unsafe, never '.' or '..'."""
    name = quote(stream_id, safe=":@=+,-_~.")
    return "%2E" + name[1:] if name.startswith(".") else name


def snapshot_directory(url: str) -> Path | None:
    """Where the snapshots of the store at `url` go, unless a directory is given.

    `CHORUS_SNAPSHOT_DIR` if set; else beside a SQLite file (`$CHORUS_DATA_DIR/snapshots`
    for the default store); for PostgreSQL, `$CHORUS_DATA_DIR/snapshots`
    (`snapshots-SCHEMA` for a `?schema=` URL) when CHORUS_DATA_DIR is set, else nowhere:
    a log shared by a cluster has no one obvious machine folder, so say which. Nowhere
    for memory:// (its views die with the process). Without a folder the view's rows
    are still kept and `chorus snapshot` still works; only the files are not written.
    """
    if os.environ.get("CHORUS_SNAPSHOT_DIR"):
        return Path(os.environ["CHORUS_SNAPSHOT_DIR"]).expanduser()
    parsed = urlparse(url)
    if parsed.scheme == "sqlite":
        return Path(unquote(url.removeprefix("sqlite:///").split("?")[0])).parent / "snapshots"
    if parsed.scheme in ("postgresql", "postgres") and os.environ.get("CHORUS_DATA_DIR"):
        data_dir = Path(os.environ["CHORUS_DATA_DIR"]).expanduser()
        schema = parse_qs(parsed.query).get("schema", [""])[0]
        return data_dir / (f"snapshots-{stream_folder(schema)}" if schema else "snapshots")
    return None
