"""How the Ray actors that do a run's work come back after a crash or a lost node: one set
of options for all of them, so the lead actor `Client.spawn` starts, the tool actors
`Registry.get_tool` starts and the relay's builder and verifier cannot drift apart.

- `max_restarts=3`: Ray restarts a dead actor up to three times; its constructor runs
  again and its shell rehydrates from the log.
- `max_task_retries=-1`: a call cut off by the actor's death is re-sent until the actor
  answers again or is dead for good (its restarts spent), never a fixed number of times.
  Until Ray notices a lost node, each call to an actor on it is refused at once and spends
  a retry: with 3, a run's `serve` ran out of them before the actor restarted elsewhere,
  and the run failed while its actor came back (issue 19). Only the actor's death re-sends
  a call; one that raises is not retried (Ray's `retry_exceptions` stays off).

So a call may run again on the restarted actor; each kind is safe to re-send for its own
reason. `serve` resumes from the log and its commands' idempotency keys append nothing
twice. A relay turn serves the calls its stream recorded already (actors.relay.recording).
A tool's `execute` runs its body again, and the agent records only the call that returns
(ToolCalled and ToolReturned are appended together, after it: actors.runtime.perform), so a
tool must tolerate a second run: the registered ones read, or converge (index_repository),
and their own model calls are served from the tool's stream (actors.runtime.tool_context).

Pure: no Ray here; callers pass these to `ActorClass.options(...)`.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

MAX_RESTARTS = 3
RESTARTABLE: Mapping[str, int] = MappingProxyType({"max_restarts": MAX_RESTARTS, "max_task_retries": -1})


def restartable(**options: Any) -> dict[str, Any]:
    """`ActorClass.options(**restartable(name=...))`: the restart options plus `options`,
    which may not set them again (one place decides how a run's actors survive)."""
    clash = sorted(RESTARTABLE.keys() & options.keys())
    if clash:
        raise ValueError(f"{', '.join(clash)} is set by actors.runtime.actor_options for every run actor")
    return {**RESTARTABLE, **options}
