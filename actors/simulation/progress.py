"""How a session's events read as progress lines (`chorus sim step`, `chorus log`)."""

from __future__ import annotations

from typing import Any

from actors.simulation.director import CycleResult
from events.base import Event
from actors.simulation.events import (
    Communicated,
    CycleCommitted,
    CycleRolledBack,
    PatchCommitted,
    ProcessTransitioned,
    StimulusQueued,
    SynthCognized,
    SynthCreated,
    WorldCreated,
)


def cycle_summary(result: CycleResult) -> dict[str, Any]:
    verdict = result.verdict
    return {
        "cycle": result.cycle,
        "committed": result.committed,
        "microcycles": result.microcycles,
        "quiescent": result.quiescent,
        "outcomes": [o.model_dump() for o in result.outcomes],
        "invariant": getattr(verdict, "invariant", None),
        "message": getattr(verdict, "message", None),
    }


def describe(event: Event, names: dict[str, str] | None = None, brief: bool = False) -> str | None:
    """A line for a simulation event; None for events of other workloads."""
    names = names or {}

    def who(synth_id: str) -> str:
        return names.get(synth_id, synth_id[:8])

    if isinstance(event, WorldCreated):
        return f"world {event.pack!r} created ({len(event.world.get('entities', {}))} entities)"
    if isinstance(event, SynthCreated):
        return f"synth {event.synth.get('identity', {}).get('name', '?')} created"
    if isinstance(event, StimulusQueued):
        by = f" by {event.principal}" if event.principal else ""
        return f"stimulus queued from {event.source}{by}: {event.text!r}"
    if isinstance(event, PatchCommitted):
        ops = ", ".join(str(op.get("op", "?")) for op in event.operations) or "no operations"
        note = f" — {event.note[:80]}" if event.note else ""
        return f"patch {event.patch_id[:8]} committed by {event.principal}: {ops}{note}"
    if isinstance(event, SynthCognized):
        synth = who(event.stream_id.rsplit(":synth:", 1)[-1])
        actions = ", ".join(_intent(i, names) for i in event.intents) or "nothing"
        thought = ""
        if event.response and not brief:
            resolve = (event.response.get("inner_monologue") or {}).get("resolve") or ""
            thought = f" — {resolve[:100]}" if resolve else ""
        failed = f" (invalid: {event.error[:80]})" if event.error else ""
        return f"  [{event.cycle}.{event.microcycle}] {synth}: {actions}{failed}{thought}"
    if isinstance(event, Communicated):
        hearers = ", ".join(who(h) for h in event.hearer_ids) or "nobody"
        return f"  {event.speaker or 'someone'} says {event.text!r} (heard by {hearers})"
    if isinstance(event, ProcessTransitioned):
        return f"  process {event.source} -> {event.target}"
    if isinstance(event, CycleCommitted):
        outcomes = "; ".join(
            f"{who(o['synth_id'])} {o['action_id'].split('_')[0]} {o['status']}"
            + (f" ({o['reason'][:60]})" if o["status"] != "ok" and o.get("reason") else "")
            for o in event.outcomes
        )
        settled = "" if event.quiescent else ", budget spent"
        carried = len({(c["speaker"], c["text"], c["microcycle"]) for cs in event.carried_speech.values() for c in cs})
        later = f"; {carried} line(s) of speech heard next cycle" if carried else ""
        return f"cycle {event.cycle} committed: {event.microcycles} microcycle(s){settled}; {outcomes or 'no actions'}{later}"
    if isinstance(event, CycleRolledBack):
        return f"cycle {event.cycle} ROLLED BACK: invariant {event.invariant} failed: {event.message[:200]}"
    if event.stream_id.startswith("sim:"):
        return ""  # world changes show through the cycle's outcomes
    return None


def _intent(intent: dict[str, Any], names: dict[str, str]) -> str:
    action = intent.get("action_id", "?")
    if action == "communicate":
        return f"says {intent.get('text', '')[:80]!r}"
    return action.split("_")[0] if "_" in action else action
