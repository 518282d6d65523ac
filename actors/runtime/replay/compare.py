"""Two runs side by side, as data (the page's "side by side" view; `chorus diff` prints the
same finding as text): their lead streams aligned event by event up to where they part and
after, the lead actor's state on each side at that point, and the prompt each side's model
received at that point, message by message.

    compare_runs(store, a, b, context=5, after=50)  -> Comparison
    message_diff(old, new)                          -> [{"status", "role", "a", "b"}]

Reads only. What a caller may see of the payloads is the caller's business (the API passes
them through the principal's view): every value here is JSON as recorded.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from actors.runtime.replay.diff import _end, _fact, lead_streams
from actors.runtime.replay.report import FORK_MARKS
from actors.runtime.replay.state import state_at
from events.base import ENVELOPE_FIELDS, Event

MAX_CONTEXT = 50
MAX_AFTER = 500


@dataclass
class Comparison:
    a: str
    b: str
    kind: str
    lead_label: str
    shared: int  # leading lead events that are the same fact
    lead_a: str | None
    lead_b: str | None
    # aligned rows (`aligned`): row number, the event on each side (None past an end or beside
    # a fork's mark), same fact or not
    rows: list[dict[str, Any]] = field(default_factory=list)
    first_a: Event | None = None
    first_b: Event | None = None
    end_a: str = ""
    end_b: str = ""
    events_a: int = 0
    events_b: int = 0
    state_a: dict[str, Any] | None = None  # the lead's state once its first differing event is applied
    state_b: dict[str, Any] | None = None
    prompt_a: Event | None = None  # the LLM request at the parting (see compare_runs)
    prompt_b: Event | None = None
    positions: dict[str, int] = field(default_factory=dict)  # event id -> global position


def compare_runs(store: Any, run_a: str, run_b: str, context: int = 5, after: int = 50) -> Comparison:
    """Where two runs of one kind part, with `context` shared lead events before it and up
    to `after` events of each side from it. ValueError for runs of two kinds."""
    context = max(0, min(int(context), MAX_CONTEXT))
    after = max(1, min(int(after), MAX_AFTER))
    kinds, records, (la, lb), shared = lead_streams(store, run_a, run_b)
    positions = {str(r.event.event_id): r.position for recs in records for r in recs}
    first_a = la[shared] if shared < len(la) else None
    first_b = lb[shared] if shared < len(lb) else None
    rows = []
    for i, (ea, eb) in enumerate(aligned(la, lb, shared)):
        if i < shared - context:
            continue
        if i >= shared + after:
            break
        same = ea is not None and eb is not None and ea.type_name == eb.type_name and _fact(ea, run_a) == _fact(eb, run_b)
        rows.append({"index": i, "a": ea, "b": eb, "same": same})
    out = Comparison(
        a=run_a, b=run_b, kind=kinds[0].wording.lead, lead_label=kinds[0].wording.lead_label, shared=shared,
        lead_a=la[0].stream_id if la else None, lead_b=lb[0].stream_id if lb else None,
        rows=rows, first_a=first_a, first_b=first_b, end_a=_end(store, run_a), end_b=_end(store, run_b),
        events_a=len(la), events_b=len(lb), positions=positions,
    )  # fmt: skip
    for side, lead, first in (("a", la, first_a), ("b", lb, first_b)):
        at = first or (lead[-1] if lead else None)
        if at is None:
            continue
        try:
            _, value = state_at(store, at.stream_id, at.version)
            setattr(out, f"state_{side}", value.model_dump(mode="json"))
        except (LookupError, ValueError):
            pass  # a stream no behaviour folds: no state to show
        # the prompt at the parting: when the runs part at an answer, the request it answered;
        # else the lead's first LLM request from the parting on (the first call the parting
        # changed: another model, another context), else its last before it
        asked = [(i, e) for i, e in enumerate(lead) if e.type_name == "LlmRequested" and e.stream_id == at.stream_id]
        later = [e for i, e in asked if i >= shared]
        earlier = [e for i, e in asked if i < shared]
        answered = first is not None and first.type_name in ("LlmCompleted", "LlmFailed")
        pick = (earlier[-1:] if answered else later[:1]) or later[:1] or earlier[-1:]
        setattr(out, f"prompt_{side}", pick[0] if pick else None)
    return out


def aligned(la: list[Event], lb: list[Event], shared: int) -> Iterator[tuple[Event | None, Event | None]]:
    """The two lead streams as rows: the shared events pairwise, then, from the parting, each
    side's events pairwise except that a fork's mark (`AgentForked`, and a `PromptEdited`
    after it) gets a row of its own with nothing on the other side, so that what the fork did
    after its mark lines up with what the origin did at the same point."""
    i = j = 0
    while i < len(la) or j < len(lb):
        ea = la[i] if i < len(la) else None
        eb = lb[j] if j < len(lb) else None
        if i >= shared and ea is not None and eb is not None and ea.type_name != eb.type_name:
            if eb.type_name in FORK_MARKS:
                yield None, eb
                j += 1
                continue
            if ea.type_name in FORK_MARKS:
                yield ea, None
                i += 1
                continue
        yield ea, eb
        i, j = i + (ea is not None), j + (eb is not None)


def payload(e: Event) -> dict[str, Any]:
    return e.model_dump(mode="json", exclude=set(ENVELOPE_FIELDS))


def state_diff(a: Any, b: Any, path: str = "", limit: int = 200) -> list[dict[str, Any]]:
    """The leaves where two JSON values differ: [{"path", "a", "b"}] (`missing` absent)."""
    out: list[dict[str, Any]] = []
    _walk(a, b, path, out, limit)
    return out


_MISSING = {"missing": True}


def _walk(a: Any, b: Any, path: str, out: list[dict[str, Any]], limit: int) -> None:
    if len(out) >= limit or a == b:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for k in list(a) + [k for k in b if k not in a]:
            _walk(a.get(k, _MISSING), b.get(k, _MISSING), f"{path}.{k}" if path else str(k), out, limit)
        return
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _walk(x, y, f"{path}[{i}]", out, limit)
        return
    out.append({"path": path or "(all)", "a": None if a is _MISSING else a, "b": None if b is _MISSING else b,
                "only": "b" if a is _MISSING else "a" if b is _MISSING else None})  # fmt: skip


def message_diff(old: Any, new: Any) -> list[dict[str, Any]]:
    """Two prompts (lists of {"role", "content"}) message by message: "same", "changed",
    "added" (only in `new`) or "removed" (only in `old`)."""
    old = old if isinstance(old, list) else [] if old is None else [{"role": "?", "content": old}]
    new = new if isinstance(new, list) else [] if new is None else [{"role": "?", "content": new}]
    out = []
    for i in range(max(len(old), len(new))):
        x = old[i] if i < len(old) else None
        y = new[i] if i < len(new) else None
        status = "added" if x is None else "removed" if y is None else "same" if x == y else "changed"
        m = y if y is not None else x
        out.append({"index": i, "status": status, "role": (m or {}).get("role", "?") if isinstance(m, dict) else "?",
                    "a": _content(x), "b": _content(y)})  # fmt: skip
    return out


def _content(m: Any) -> Any:
    if m is None:
        return None
    return m.get("content") if isinstance(m, dict) else m
