"""Durable timers: who serves a suspended function run again when its timer is due.

A function run suspended in `ctx.sleep(s)` or `ctx.wait_for(name, timeout=s)` (longer than
`actors.runtime.durable.IN_PLACE_S`) holds no actor: the log records the wake-up time (the
sleep's `CallRecorded` value, `SignalAwaited.until`, and the run's `RunWaiting.until`, which
the runs view keeps as `wake_at`). The wake-up comes from one small detached Ray actor per
namespace and store (`chorus-timers:<hash of the store URL>`, no CPU): the run's actor hands
it the time as it lets go (`schedule_wake`), and at that time it serves the run again
(its run kind's `wake`, `FunctionRun.wake`: as `chorus resume RUN` would). It is detached and restarted by Ray,
and its constructor rebuilds every due timer from the runs view, so a timer survives the
timer actor's death and the driver's exit; after the whole Ray cluster restarted, the first
timer set (or `chorus resume RUN` of a waiting run, which starts it too) brings it back, and
it then wakes every run whose time has come. A run it wakes after a restart uses the
configured model (a provider handed over in-process, as tests do, is not in the log).

A run woken early (`chorus resume`) re-runs to the same sleep and suspends again: waking is
idempotent, the log decides.

The actor a wake-up starts is owned by the timer actor (Ray fate-shares an actor with its
owner): should the timer actor die while a run it woke is being served, that run stops
with it and shows "running" until `chorus resume RUN`, as any run whose actor died does.
"""

from __future__ import annotations

import hashlib
import threading
import time
from datetime import datetime, timezone
from typing import Any

POLL_S = 0.5


def timer_actor_name(store_url: str) -> str:
    return "chorus-timers:" + hashlib.sha256(store_url.encode()).hexdigest()[:12]


def schedule_wake(settings: Any, run_id: str, until: datetime, llm: Any = None) -> None:
    """Ask the store's timer actor (started if need be) to serve `run_id` again at `until`;
    returns once it holds the timer (a call still queued when the caller's actor goes away
    would be lost with it)."""
    import ray

    ray.get(timer_actor(settings).schedule.remote(run_id, until.isoformat(), llm))


def timer_actor(settings: Any) -> Any:
    import ray

    return (
        ray.remote(TimerActor)
        .options(
            name=timer_actor_name(settings.store_url), get_if_exists=True, lifetime="detached",
            num_cpus=0, max_restarts=-1, max_concurrency=4,
        )  # fmt: skip
        .remote(settings)
    )


def due_from_log(store_url: str) -> dict[str, datetime]:
    """Runs waiting on a timer, with when it is due: from the runs view (caught up)."""
    from events.store import EventStore
    from projections.runs import RunsView

    store = EventStore(store_url)
    try:
        rows = RunsView.open(store).list(status="waiting")
    finally:
        store.close()
    return {r["run_id"]: r["wake_at"] for r in rows if r["wake_at"] is not None}


def wake_run(settings: Any, run_id: str, llm: Any = None) -> Any:
    """Serve `run_id` again through its run kind's `wake` (found in the registry, so this
    module imports no run kind)."""
    from actors.runtime.registry import Registry
    from actors.runtime.run import RunLifecycle, run_stream
    from actors.runtime.shell import ActorShell
    from events.store import EventStore

    store = EventStore(settings.store_url)
    try:
        kind = ActorShell(RunLifecycle(), run_stream(run_id), store).load().state.kind
    finally:
        store.close()
    wake = getattr(Registry.run_kind(kind).running, "wake", None)
    if wake is None:
        raise ValueError(f"runs of kind {kind!r} have no durable timers")
    return wake(settings, run_id, llm)


class TimerActor:
    """Holds the due timers of one store and serves each run again when its time comes."""

    def __init__(self, settings: Any) -> None:
        self.settings = settings
        self.lock = threading.Lock()
        self.due: dict[str, tuple[datetime, Any]] = {k: (v, None) for k, v in due_from_log(settings.store_url).items()}
        self.woken: list[str] = []
        threading.Thread(target=self._loop, daemon=True).start()

    def schedule(self, run_id: str, until: str, llm: Any = None) -> None:
        with self.lock:
            self.due[run_id] = (datetime.fromisoformat(until), llm)

    def pending(self) -> dict[str, str]:
        with self.lock:
            return {k: v[0].isoformat() for k, v in self.due.items()}

    def _loop(self) -> None:
        while True:
            now = datetime.now(timezone.utc)
            with self.lock:
                ready = [(k, llm) for k, (at, llm) in self.due.items() if at <= now]
                for k, _ in ready:
                    del self.due[k]
            for run_id, llm in ready:
                self._wake(run_id, llm)
            time.sleep(POLL_S)

    def _wake(self, run_id: str, llm: Any) -> None:
        try:
            wake_run(self.settings, run_id, llm)
            self.woken.append(run_id)
        except Exception as e:  # noqa: BLE001 - one run's failure must not stop the others' timers
            print(f"chorus-timers: could not wake run {run_id}: {type(e).__name__}: {e}", flush=True)
