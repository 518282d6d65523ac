"""Patch sets for tests of the grounded agent, named by their patches (actors/agent/patches.py),
never by the rule revision a run once recorded (only the upcaster's tests read those)."""

from __future__ import annotations

from actors.agent.patches import GROUNDED_PATCHES


def grounded_without(*names: str) -> list[str]:
    """A new grounded run's patches but `names`: how a run recorded before them is judged."""
    unknown = set(names) - set(GROUNDED_PATCHES)
    if unknown:
        raise KeyError(f"no grounded patch named {sorted(unknown)}")
    return [p for p in GROUNDED_PATCHES if p not in names]
