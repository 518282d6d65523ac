"""Helpers Ray workers import by name for tests/integration/test_group_commit.py."""

from __future__ import annotations

from typing import Any

from events import Event, event_type
from events.store import ConcurrencyError


@event_type("test.group.Noted")
class Noted(Event):
    writer: int
    index: int


class Writer:
    """A process of its own (a Ray actor) that appends through the store writer."""

    def __init__(self, writer: Any, w: int) -> None:
        self.writer, self.w = writer, w

    def run(self, contested_rounds: int, own: int) -> list[str]:
        import ray

        from events.store import encode_append

        outcomes = []
        for k in range(own):  # a stream of its own, one event per append
            _, encoded = encode_append([(f"own{self.w}", [Noted(writer=self.w, index=k)], k)])
            ray.get(self.writer.append_encoded.remote(encoded))
        for rnd in range(contested_rounds):  # all writers at the same version of one stream
            _, encoded = encode_append([("contested", [Noted(writer=self.w, index=rnd)] * 2, 2 * rnd)])
            try:
                ray.get(self.writer.append_encoded.remote(encoded))
                outcomes.append("won")
            except ConcurrencyError:
                outcomes.append("lost")
        return outcomes
