"""Deprecated: the simulation's test doubles moved to `actors.testing.simulation`. This
module only re-exports them, so older imports keep working."""

from __future__ import annotations

import warnings

from actors.testing.simulation import (
    ACTION,
    BLOCKED,
    PREFERENCE,
    marco_polo,
    menu,
    reply,
    scripted_mind,
    scripted_synths,
    slow_mind,
    straggler_mind,
)

__all__ = [
    "ACTION", "BLOCKED", "PREFERENCE", "marco_polo", "menu", "reply", "scripted_mind", "scripted_synths",
    "slow_mind", "straggler_mind",
]

warnings.warn(
    "actors.simulation.testing is deprecated: import its test doubles from actors.testing.simulation",
    DeprecationWarning,
    stacklevel=2,
)
