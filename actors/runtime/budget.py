"""A run's ledger (`actors.runtime.ledger`) over the store: rebuilt from the run's log, and
shared by every actor and tool of the run.

In-process (tests, no Ray) it is a `Ledger` with a lock; on Ray one small `LedgerActor` per run
(named `chorus-ledger:RUN`, no CPU) holds it, and the lead actor hands its handle to the run's
tool actors, on whichever node, so each reservation is atomic across all of them. That actor
costs a Ray worker process per run, so it is started only when a tool actor of the run is
given the ledger (`SharedOnDemand.share`: a tool that makes model calls of its own); until
then, and for every run whose calls are all the lead's (a function agent, a ReAct run with
file tools only), the ledger is a `Ledger` in the lead's process. Since `Budget()` limits
LLM calls by default, every run has a ledger. The actor
belongs to the lead: if the lead dies it dies too, and the restarted lead starts a new one
from the log. If the ledger actor alone dies, Ray restarts it under the same handle and it
rebuilds its count from the log: no one has to find it again by name (a worker caches the
handles it looked up by name, and can keep serving a killed actor's long after it died).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# A run's streams hold its workload's and its agent's event types, which register with their
# plugins: imported, the registry loads those for a type name this process has not seen (a
# LedgerActor restarted by Ray in a fresh worker reads the run's streams).
import actors.runtime.registry  # noqa: F401
from actors.runtime.ledger import BudgetExhausted, Ledger, Usage, limited, usage_of
from events.errors import ErrorInfo
from events.runs import Budget, RunSubmitted

USAGE_TYPES = ("LlmRequested", "LlmCompleted", "LlmFailed")


def run_usage(store: Any, run_id: str, streams: Iterable[str] | None = None) -> Usage:
    """What the run's log records of LLM calls and tokens: in every stream of the run, or,
    cheaper, in the `streams` that hold its calls (read by stream, not by scanning the log)."""
    if streams is not None:
        return usage_of(e for stream in dict.fromkeys(streams) for e in store.read_stream(stream))
    return usage_of(r.event for r in store.read_all(run_id=run_id, types=USAGE_TYPES))


def run_budget(store: Any, run_id: str) -> Budget:
    """The budget the run was submitted with; unlimited for a stream of calls with no run
    recorded (a tool's context in a test)."""
    submitted = next((e for e in store.read_stream(f"run:{run_id}") if isinstance(e, RunSubmitted)), None)
    return submitted.budget if submitted is not None else Budget.unlimited()


def ledger_from_log(store: Any, run_id: str, streams: Iterable[str] | None = None) -> Ledger:
    """The run's ledger as its log leaves it (after a crash: the count goes on)."""
    return Ledger(run_budget(store, run_id), run_usage(store, run_id, streams))


class LedgerActor:
    """The Ray shell of one run's ledger: reservations are atomic (one call at a time)."""

    def __init__(
        self, budget: Budget, calls: int, tokens: int, run_id: str = "", store_url: str = "",
        streams: tuple[str, ...] | None = None,
    ) -> None:  # fmt: skip
        import warnings

        import ray

        with warnings.catch_warnings():  # Ray's own property uses a deprecated one inside
            warnings.simplefilter("ignore", DeprecationWarning)
            restarted = bool(store_url) and ray.get_runtime_context().was_current_actor_reconstructed
        if restarted:
            from events.store import EventStore  # lazily: only after a crash

            store = EventStore(store_url)  # restarted after a crash: the count is the log's
            try:
                self.ledger = ledger_from_log(store, run_id, streams)
            finally:
                store.close()
        else:
            self.ledger = Ledger(budget, Usage(calls, tokens))

    def reserve(self, estimate: int) -> int | ErrorInfo:
        try:
            return self.ledger.reserve(estimate)
        except BudgetExhausted as e:
            return e.error  # a value, not a remote exception: the caller raises it

    def settle(self, hold: int, calls: int, tokens: int) -> None:
        self.ledger.settle(hold, Usage(calls, tokens))

    def spent(self) -> tuple[int, int]:
        u = self.ledger.spent()
        return (u.calls, u.tokens)


class RayLedger:
    """A handle on a run's `LedgerActor`, with `Ledger`'s interface; picklable, so the run's
    tool actors (on any node) draw on the same ledger. If the ledger actor died with the lead
    (a crash), the next call starts the run's new one from the log and goes on."""

    ATTEMPTS = 3

    def __init__(self, handle: Any, budget: Budget, run_id: str, store_url: str, streams: tuple[str, ...] | None) -> None:
        self.handle = handle
        self.budget = budget
        self.run_id = run_id
        self.store_url = store_url
        self.streams = streams

    @classmethod
    def start(cls, run_id: str, ledger: Ledger, store_url: str, streams: Iterable[str] | None = None) -> RayLedger:
        """The run's ledger actor, started from `ledger` (as the log left it); if it runs
        already (a lead restarted while it lived), that one, which knows the calls in flight."""
        return cls(_ledger_actor(run_id, ledger, store_url, _tuple(streams)), ledger.budget, run_id, store_url, _tuple(streams))

    def _reopen(self) -> None:
        from events.store import EventStore  # lazily: only after a crash

        store = EventStore(self.store_url)
        try:
            self.handle = _ledger_actor(self.run_id, ledger_from_log(store, self.run_id, self.streams), self.store_url, self.streams)
        finally:
            store.close()

    def _ask(self, method: str, *args: Any, retry: bool = True) -> Any:
        import ray
        from ray.exceptions import RayActorError

        for attempt in range(self.ATTEMPTS):
            try:
                return ray.get(getattr(self.handle, method).remote(*args))
            except RayActorError:
                if attempt + 1 == self.ATTEMPTS:
                    raise
                if not retry:
                    return None
                if attempt:  # it did not come back (it died with its owner): start the run's new one
                    self._reopen()
                # else: it died in the call; Ray restarts it, and the next call waits for that
        return None

    def reserve(self, estimate: int = 0) -> int:
        answer = self._ask("reserve", estimate)
        if isinstance(answer, ErrorInfo):
            raise BudgetExhausted(answer)
        return int(answer)

    def settle(self, hold: int, usage: Usage) -> None:
        # A ledger that died meanwhile is rebuilt from the log, which holds this call already.
        self._ask("settle", hold, usage.calls, usage.tokens, retry=False)

    def spent(self) -> Usage:
        return Usage(*self._ask("spent"))

    def close(self) -> None:
        import ray

        ray.kill(self.handle, no_restart=True)


class SharedOnDemand:
    """A run's ledger in the lead's process, moved to the run's `LedgerActor` the first time a
    tool actor needs to draw on it too (`share`). Only the lead holds one (not picklable on
    purpose: tools get the `RayLedger` that `share` returns)."""

    def __init__(self, local: Ledger, run_id: str, store_url: str, streams: Iterable[str] | None) -> None:
        self.local = local
        self.run_id, self.store_url, self.streams = run_id, store_url, _tuple(streams)
        self.budget = local.budget
        self.ray: RayLedger | None = None
        self._local_holds = 0  # holds taken before the move settle where they were taken

    def share(self) -> RayLedger:
        """The run's ledger actor, started (once) from what this one has spent and holds."""
        if self.ray is None:
            l = self.local
            with l._lock:
                start = Ledger(l.budget, Usage(l.calls + l.in_flight, l.tokens + l.held_tokens))  # never under
            self.ray = RayLedger.start(self.run_id, start, self.store_url, self.streams)
        return self.ray

    def reserve(self, estimate: int = 0) -> int:
        if self.ray is not None:
            return self.ray.reserve(estimate)
        hold = self.local.reserve(estimate)
        self._local_holds += 1
        return hold

    def settle(self, hold: int, usage: Usage) -> None:
        if self._local_holds:
            self._local_holds -= 1
            self.local.settle(hold, usage)
        elif self.ray is not None:
            self.ray.settle(hold, usage)

    def spent(self) -> Usage:
        return self.ray.spent() if self.ray is not None else self.local.spent()

    def close(self) -> None:
        if self.ray is not None:
            self.ray.close()

    def __reduce__(self) -> Any:
        raise TypeError("hand a tool `ledger.share()`, not the lead's SharedOnDemand")


def share_ledger(ledger: Any) -> Any:
    """What a tool actor of the run draws on: the run's `LedgerActor` (started now if need
    be) for a lead's `SharedOnDemand`, else `ledger` as it is."""
    share = getattr(ledger, "share", None)
    return share() if callable(share) else ledger


def _ledger_actor(run_id: str, ledger: Ledger, store_url: str = "", streams: tuple[str, ...] | None = None) -> Any:
    import ray

    spent = ledger.spent()
    return (
        ray.remote(LedgerActor)
        .options(name=f"chorus-ledger:{run_id}", get_if_exists=True, num_cpus=0, max_concurrency=1, max_restarts=-1)
        .remote(ledger.budget, spent.calls, spent.tokens, run_id, store_url, streams)
    )


def open_ledger(
    store: Any, run_id: str, *, shared: bool = False, streams: Iterable[str] | None = None
) -> Ledger | SharedOnDemand | None:
    """The ledger a run's calls draw on, rebuilt from its log (`streams`: those that hold its
    calls; default every stream of the run): None for a run without a call or token limit.
    `shared`: the run's tools are Ray actors that may draw on it, so the ledger moves to the
    run's `LedgerActor` when the first of them is given it (`share_ledger`; when Ray is up);
    otherwise a `Ledger` in this process."""
    budget = run_budget(store, run_id)
    if not limited(budget):
        return None
    ledger = Ledger(budget, run_usage(store, run_id, streams))
    if shared:
        import ray

        if ray.is_initialized():
            return SharedOnDemand(ledger, run_id, store.url, streams)
    return ledger


def _tuple(streams: Iterable[str] | None) -> tuple[str, ...] | None:
    return None if streams is None else tuple(streams)


def close_ledger(ledger: Any) -> None:
    close = getattr(ledger, "close", None)
    if callable(close):
        try:
            close()
        except Exception:  # noqa: BLE001 - gone already: nothing to stop
            pass
