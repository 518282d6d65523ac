"""What each scope sees of what a run recorded: the one place the API redacts.

Every route that carries a record's content goes through a `View` made from the request's
principal: events as JSON (runs and sessions), the SSE frames (runs and sessions), the LLM
call log, an actor's state, a session's objects, `diff` and the replay verdict. An admin
sees everything. For read and operate, each field a run kind declares admin-only
(a RunKind's `reading.admin_only(stream_id, what)`) is replaced by `REDACTED`; the declarations of
every registered kind are asked (stream ids are namespaced per workload), so a run whose
kind is unknown is still covered.

What is admin-only today (seed 002 reserves the inner monologue for admin):

| record                               | read / operate                               | admin |
|--------------------------------------|----------------------------------------------|-------|
| a synth's SynthCognized              | cycle, microcycle, intents; `response` (monologue, beliefs, memories, mood, theory of mind) and `error` redacted | all |
| a synth's SynthCreated / state       | identity, senses, affect, counters; beliefs, projects, mental models, memories redacted | all |
| a synth's SynthPatched               | `changes` redacted                            | all |
| a synth's LLM calls                  | model, params, hashes, tokens, latency; prompt (`messages`), reply (`content`, `parsed`) and a failure's error redacted | all |
| any other event of a synth stream    | type and envelope only                        | all |
| world, director, run streams         | all (speech, actions, stimuli, patches)       | all |
| other workloads' prompts and replies (agents, researcher, tasks, relay) | all: they hold what the run's events and answer already show (its goal, files it read, code it wrote) | all |

Operate adds control (submit, cancel, fork, turns, steps), never more to read.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from functools import lru_cache
from typing import Any

from actors.api.auth import Principal, allows
from actors.api.schemas import event_dict, json_bytes
from actors.runtime.registry import Registry, load_workloads
from events.base import ENVELOPE_FIELDS, Event
from events.store import Recorded
from projections.audit_query import LlmCall

REDACTED = "[redacted: admin only]"
# LlmCall's fields (projections.audit_query) and the recorded event each comes from
_CALL_FIELDS = {"messages": "LlmRequested", "content": "LlmCompleted", "parsed": "LlmCompleted", "error": "LlmFailed"}


@lru_cache(maxsize=8192)
def admin_only(stream_id: str, what: str) -> tuple[str, ...]:
    """The union of every registered kind's declaration for this stream and record."""
    load_workloads()
    found: list[str] = []
    for kind in Registry.run_kinds():
        found += [p for p in kind.reading.admin_only(stream_id, what) if p not in found]
    return tuple(found)


def redact(data: dict[str, Any], paths: tuple[str, ...]) -> dict[str, Any]:
    """A copy of `data` with each dotted path's value replaced by REDACTED ("*": all)."""
    if not paths:
        return data
    if "*" in paths:
        return {k: REDACTED for k in data}
    out = copy.deepcopy(data)
    for path in paths:
        node: Any = out
        *parents, last = path.split(".")
        for key in parents:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict) and last in node:
            node[last] = REDACTED
    return out


@dataclasses.dataclass(frozen=True)
class View:
    """What one principal may see."""

    full: bool

    @classmethod
    def of(cls, principal: Principal) -> View:
        return cls(full=allows(principal.scope, "admin"))

    @property
    def key(self) -> str:
        return "admin" if self.full else "redacted"

    def data(self, stream_id: str, what: str, data: dict[str, Any]) -> dict[str, Any]:
        return data if self.full else redact(data, admin_only(stream_id, what))

    def event(self, rec: Recorded) -> dict[str, Any]:
        """One element of an events page (`event_dict`), redacted."""
        out = event_dict(rec)
        if not self.full:
            out["data"] = self.data(rec.event.stream_id, rec.event.type_name, out["data"])
        return out

    def frame(self, rec: Recorded) -> bytes:
        """One Server-Sent Event: `id:` the position, `event:` the type, `data:` the JSON."""
        return b"id: %d\nevent: %s\ndata: %s\n\n" % (rec.position, rec.event.type_name.encode(), json_bytes(self.event(rec)))

    def payload(self, e: Event) -> dict[str, Any]:
        return self.data(e.stream_id, e.type_name, e.model_dump(mode="json", exclude=set(ENVELOPE_FIELDS)))

    def hides(self, e: Event | None) -> bool:
        return e is not None and not self.full and bool(admin_only(e.stream_id, e.type_name))

    def show(self, e: Event | None, limit: int = 240) -> str:
        """An event in one line (as `chorus diff` and the replay verdict print one)."""
        if e is None:
            return "(nothing)"
        text = json.dumps(self.payload(e), default=str, ensure_ascii=False)
        return f"@{e.version} {e.type_name} {text[:limit]}"

    def llm_call(self, call: LlmCall) -> LlmCall:
        if self.full:
            return call
        changes = {}
        for name, what in _CALL_FIELDS.items():
            value = getattr(call, name)
            paths = admin_only(call.stream_id, what)
            if value is not None and (name in paths or "*" in paths):
                changes[name] = (
                    {"redacted": REDACTED} if isinstance(value, dict)
                    else [{"role": "redacted", "content": REDACTED}] if isinstance(value, list)
                    else REDACTED
                )  # fmt: skip
        return dataclasses.replace(call, **changes) if changes else call

    def state(self, stream_id: str, state: dict[str, Any]) -> dict[str, Any]:
        return self.data(stream_id, "state", state)
