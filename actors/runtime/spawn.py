"""Starting the Ray actor that serves a run: `Client.spawn`'s work, with no client, so the
timer actor (`actors.runtime.timers`) can serve a run again the same way."""

from __future__ import annotations

from typing import Any

from actors.runtime.actor_options import restartable
from actors.runtime.behaviour import Command
from actors.runtime.placement import ray_options
from actors.runtime.wire import to_wire


def spawn_actor(placement: str, actor_class: type, name: str, args: tuple[Any, ...], start: tuple[Any, ...]) -> tuple[Any, Any]:
    """A Ray actor `actor_class(*args)` named `name`, restartable, placed by `placement`,
    and the ref of its `serve(*start)` (commands sent in their wire form)."""
    import ray  # lazily: reading runs (`chorus runs`, replay) needs no Ray

    concurrency = 2 if callable(getattr(actor_class, "stop", None)) else 1
    placed = ray_options(placement, name)  # CHORUS_PLACEMENT: which nodes
    # Restarted, and `serve` re-sent until the actor answers again (actor_options); a
    # re-sent `serve` resumes from the log and appends nothing twice.
    actor = (
        ray.remote(actor_class)
        .options(**restartable(name=name, num_cpus=0, max_concurrency=concurrency, **placed))
        .remote(*args)
    )
    sent = [to_wire(a) if isinstance(a, Command) else a for a in start]  # commands as bytes (wire.py)
    return actor, actor.serve.remote(*sent)
