"""The simulation clock (seed 002): a tick counter and a configurable chronon.

Simulated time is derived, never read from the machine: `start + tick * chronon_seconds`.
A director cycle advances the clock by one tick (a `ClockAdvanced` event carries the new
tick); everything here is arithmetic on the `Clock` model, so replay gives the same times.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from actors.simulation.world import Clock

# Hours (simulated, 24h) at which each part of the day begins.
DAY_PARTS = ((5, "dawn"), (7, "day"), (18, "dusk"), (20, "night"))


def advance(clock: Clock, ticks: int = 1) -> Clock:
    """The clock `ticks` later (a new model: the given one is not changed)."""
    return clock.model_copy(update={"tick": clock.tick + ticks})


def simulated_datetime(clock: Clock) -> datetime:
    return datetime.fromisoformat(clock.start) + timedelta(seconds=clock.tick * clock.chronon_seconds)


def simulated_time(clock: Clock, iso: bool = False) -> str:
    """"HH:MM" of the simulated time (or the full ISO timestamp with `iso=True`)."""
    moment = simulated_datetime(clock)
    return moment.isoformat() if iso else moment.strftime("%H:%M")


def time_of_day(clock: Clock) -> str:
    """"night", "dawn", "day" or "dusk" by the simulated hour."""
    hour = simulated_datetime(clock).hour
    part = "night"
    for begins, name in DAY_PARTS:
        if hour >= begins:
            part = name
    return part
