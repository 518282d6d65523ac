"""The sessions this server drives: one in-process director shell per session (as `chorus
sim step --in-process` runs it), a lock that makes its cycles, turns, stimuli and patches
one at a time, and the background runner that `resume` starts and `pause` stops.

Sessions start paused: a session runs in the background only after `resume`, here, and a
restarted server finds every session paused again. Whatever else writes to a session (the
CLI, another server) is picked up: before each change the shell is checked against the
log's stream versions and rebuilt from the log when it is behind.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from actors.simulation.client import Simulation
from actors.simulation.session import DirectorShell
from actors.simulation.streams import director_stream, synth_stream, world_stream


@dataclass(eq=False)
class LiveSession:
    run_id: str
    lock: threading.RLock = field(default_factory=threading.RLock)
    handle: Simulation | None = None
    runner: threading.Thread | None = None
    stop: threading.Event = field(default_factory=threading.Event)
    error: str | None = None

    @property
    def running(self) -> bool:
        return self.runner is not None and self.runner.is_alive()


class SessionManager:
    def __init__(self, client: Any) -> None:
        self.client = client
        self._sessions: dict[str, LiveSession] = {}
        self._lock = threading.Lock()

    def live(self, run_id: str) -> LiveSession:
        with self._lock:
            found = self._sessions.get(run_id)
            if found is None:
                found = self._sessions[run_id] = LiveSession(run_id)
            return found

    def known(self, run_id: str) -> LiveSession | None:
        return self._sessions.get(run_id)

    @contextmanager
    def shell(self, run_id: str) -> Iterator[DirectorShell]:
        """The session's shell, current with the log, held by this thread alone."""
        s = self.live(run_id)
        with s.lock:
            if s.handle is None or _behind(self.client.store, s.handle.shell()):
                s.handle = Simulation(self.client, run_id, ray=False)
            yield s.handle.shell()

    def resume(self, run_id: str, cycles: int) -> LiveSession:
        s = self.live(run_id)
        with s.lock:
            if s.running:
                return s
            s.stop = threading.Event()
            s.error = None
            s.runner = threading.Thread(target=self._run, args=(s, cycles), name=f"session-{run_id}", daemon=True)
            s.runner.start()
        return s

    def pause(self, run_id: str, wait_s: float = 30.0) -> LiveSession:
        """Stop background running after the cycle in flight (waited for up to `wait_s`)."""
        s = self.live(run_id)
        s.stop.set()
        runner = s.runner
        if runner is not None:
            runner.join(timeout=wait_s)
        return s

    def close(self) -> None:
        for s in list(self._sessions.values()):
            s.stop.set()
        for s in list(self._sessions.values()):
            if s.runner is not None:
                s.runner.join(timeout=5)

    def _run(self, s: LiveSession, cycles: int) -> None:
        try:
            for _ in range(cycles):
                if s.stop.is_set():
                    return
                with self.shell(s.run_id) as shell:
                    if s.stop.is_set():
                        return
                    shell.step(1)
        except Exception as e:  # noqa: BLE001 - reported on the session (GET), never lost in a thread
            s.error = (str(e).splitlines() or [type(e).__name__])[0][:500]


def _behind(store: Any, shell: DirectorShell) -> bool:
    c, run_id = shell.canonical, shell.run_id
    streams = [world_stream(run_id), director_stream(run_id), *(synth_stream(run_id, sid) for sid in c.synths)]
    return any(store.stream_version(stream) != c.versions.get(stream, 0) for stream in streams)
