"""What every `chorus` verb shares, whichever workload adds it: the one-line error, the
store the environment names, a run followed live on the terminal, events as JSON.

Exit status, for every verb: 0 on success; 1 when a run fails; 2 for bad input or
configuration (one line on stderr, nothing written to the log); 130 when a run being
followed is interrupted (Ctrl-C or SIGTERM): it is cancelled first (`Client.cancel`).
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from actors.runtime.cli_dialect import event_record, json_default  # noqa: F401  (json_default: re-exported)
from actors.runtime.client import LlmUnavailable, RunHandle
from actors.runtime.errors import UserError
from actors.runtime.llm.call_progress import CallWatch
from actors.runtime.llm.local_server import LocalServerError
from actors.runtime.llm.types import LlmError
from actors.runtime.progress import describe
from actors.runtime.registry import Registry, RegistryError
from actors.runtime.replay import FixtureError, UnknownStream
from actors.runtime.run import UnknownRun
from actors.runtime.settings import ConfigError, Settings
from events.registry import MissingUpcaster, UnknownEventType
from events.store import EventStore, Recorded, StoreUnavailable

USER_ERRORS: tuple[type[BaseException], ...] = (
    UserError,
    ConfigError,
    StoreUnavailable,
    UnknownRun,
    RegistryError,
    ValueError,
    FileNotFoundError,
    TimeoutError,
    LlmError,
    UnknownStream,
    FixtureError,
    LlmUnavailable,
    LocalServerError,
    UnknownEventType,
    MissingUpcaster,
)


def is_user_error(e: BaseException) -> bool:
    return isinstance(e, USER_ERRORS)


def one_line(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return lines[0] if lines else type(e).__name__


def open_store(url: str | None = None) -> EventStore:
    """The event store `url` names, or the environment's (CHORUS_STORE_URL)."""
    return EventStore(url or Settings.from_env().store_url)


CANCELLED = 130  # the shell's code for a process ended by SIGINT


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """Inside, SIGTERM interrupts this process like Ctrl-C (KeyboardInterrupt), so a run
    followed on the terminal is cancelled either way. Only the CLI process's main thread
    can install it; elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def cancel_on_interrupt(handle: RunHandle, follow: Callable[[], int], err: TextIO | None = None) -> int:
    """`follow()`'s exit status; on Ctrl-C or SIGTERM, the run is cancelled (recorded as
    failed, `cancelled`, and its actors stopped), one line says so, and the status is 130."""
    try:
        with sigterm_interrupts():
            return follow()
    except KeyboardInterrupt:
        pass
    with _ignoring_interrupts():  # a second Ctrl-C must not leave the run half-cancelled
        handle.cancel(message="interrupted from the terminal")
    print(f"chorus: run {handle.run_id} cancelled", file=err or sys.stderr, flush=True)
    return CANCELLED


@contextmanager
def _ignoring_interrupts() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def follow_run(handle: RunHandle, quiet: bool = False) -> int:
    """Show a run's steps on stderr as they happen, then its answer on stdout (0) or its
    error (1); interrupted, the run is cancelled (130)."""
    return cancel_on_interrupt(handle, lambda: _follow_run(handle, quiet))


def _follow_run(handle: RunHandle, quiet: bool) -> int:
    state = handle.client.run_state(handle.run_id)
    kind = Registry.run_kind(state.kind) if state.kind else Registry.default_run_kind()
    calls = None if quiet else CallWatch(handle.client.settings.data_dir)  # tokens so far
    try:
        for rec in handle.events():
            if calls is not None:
                calls.seen(rec.event)
                line = describe(rec.event, kind=kind)
                if line:
                    print(line, file=sys.stderr, flush=True)
    finally:
        if calls is not None:
            calls.stop()
    result = handle.wait()
    if result.ok:
        print(kind.reading.present(result.answer or ""))
        return 0
    error = result.error.line() if result.error else result.status
    print(f"chorus: run {handle.run_id} failed: {error}", file=sys.stderr)
    return 1


def event_json(rec: Recorded) -> dict[str, Any]:
    """A recorded event in the one JSON shape (`actors.runtime.cli_dialect.event_record`)."""
    e = rec.event
    return event_record(
        position=rec.position,
        event_id=e.event_id,
        run_id=e.run_id,
        stream_id=e.stream_id,
        version=e.version,
        type=e.type_name,
        timestamp=e.timestamp,
        causation_id=e.causation_id,
        command_id=e.command_id,
        data=e.payload(),
    )


