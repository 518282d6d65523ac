"""The pure core of an actor: `decide(state, command) -> events` and `evolve(state, event) -> state`.

No Ray, no I/O, no clock. The shell (`actors.runtime.shell`) gives these functions the
state it rebuilt from the log and appends what `decide` returns; everything that touched
the world arrives inside the command as already-recorded effect events.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict

from events.base import Event, State

S = TypeVar("S", bound=State)


class Command(BaseModel):
    """A request to an actor. `key` is its idempotency key: the same key applies once."""

    model_config = ConfigDict(frozen=True)

    key: str


class Behaviour(Generic[S]):
    """Subclass and implement `initial`, `decide` and `evolve` as pure functions."""

    name: ClassVar[str] = "actor"
    state_type: ClassVar[type[State]]

    def initial(self) -> S:
        return self.state_type()  # type: ignore[return-value]

    def decide(self, state: S, command: Command) -> list[Event]:
        raise NotImplementedError

    def evolve(self, state: S, event: Event) -> S:
        raise NotImplementedError

    def fold(self, state: S, events: Iterable[Event]) -> S:
        for e in events:
            state = self.evolve(state, e)
        return state
