"""The shape of a fact: an immutable pydantic model with an envelope and a payload.

The envelope (stream, version, run, causation, time, id) is the same for every event;
the payload is the fields a subclass declares. `decide` builds events with the payload
only; the actor shell stamps the envelope (`Event.stamp`) just before it appends.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

ENVELOPE_FIELDS = (
    "event_id",
    "stream_id",
    "version",
    "run_id",
    "causation_id",
    "command_id",
    "timestamp",
)


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class Event(BaseModel):
    """Base of every event type. Subclasses are registered with `@event_type`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type_name: ClassVar[str] = "Event"
    schema_version: ClassVar[int] = 1

    event_id: uuid.UUID = Field(default_factory=uuid.uuid4)
    stream_id: str = ""
    version: int = 0
    run_id: str = ""
    causation_id: str | None = None
    command_id: str | None = None
    timestamp: datetime = Field(default_factory=utcnow)

    def payload(self) -> dict[str, Any]:
        """The fields this event type adds to the envelope (python-mode values)."""
        return self.model_dump(mode="python", exclude=set(ENVELOPE_FIELDS))

    def stamp(self, **envelope: Any) -> Event:
        """A copy with envelope fields set (stream_id, version, run_id, ...)."""
        unknown = set(envelope) - set(ENVELOPE_FIELDS)
        if unknown:
            raise TypeError(f"not envelope fields: {sorted(unknown)}")
        return self.model_copy(update=envelope)

    def same_fact(self, other: Event) -> bool:
        """Equal type and payload: what replay compares (ids and clocks differ)."""
        return (
            type(self) is type(other)
            and self.stream_id == other.stream_id
            and self.version == other.version
            and self.payload() == other.payload()
        )


class State(BaseModel):
    """Base of actor state models: immutable, versioned for snapshots."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: ClassVar[int] = 1
