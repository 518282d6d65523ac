"""Perception policy (seed 002, stage 3): an optional hook that reshapes a composed bundle
before delivery. It may blur, reorder or down-weight what a synth perceives; it must not
add what the channels did not let through, and it does not touch the action surface (what
the synth can do does not depend on how clearly it sees)."""

from __future__ import annotations

from actors.simulation.payloads import SensoryBundle
from actors.simulation.perception import light_level
from actors.simulation.world import WorldView


class PerceptionPolicy:
    """The default: the bundle as composed."""

    def apply(self, bundle: SensoryBundle, world: WorldView) -> SensoryBundle:
        return bundle


class LowLightAmbiguityPolicy(PerceptionPolicy):
    """In dim light (below `dim_below`), sight is less sure: visual observations lose
    salience in proportion to the light and read as guesses."""

    def __init__(self, dim_below: float = 0.6, floor: float = 0.2) -> None:
        self.dim_below = dim_below
        self.floor = floor

    def apply(self, bundle: SensoryBundle, world: WorldView) -> SensoryBundle:
        level = light_level(world, bundle.location_id)
        if level >= self.dim_below:
            return bundle
        factor = max(self.floor, level / self.dim_below)
        blurred = [
            o.model_copy(update={"salience": o.salience * factor, "text": f"In the dim light, perhaps: {o.text}"})
            if o.channel == "visual"
            else o
            for o in bundle.observations
        ]
        return bundle.model_copy(update={"observations": blurred})
