"""Tokens so far, while an LLM call streams: shown by the CLI that follows the run.

The provider (in a Ray actor) writes a small note per call it is streaming, about once a
second, under the data folder (`ProgressNotes`); the process following the run reads the
note of every call the log shows asked and not yet answered (`CallWatch`), and prints a line
when a call has run a while and its count moved. Nothing here goes into the log: the
answer's events say what the call cost. A note is keyed by the request's hash and removed
when the answer is complete; on another machine than the follower's, no note is seen, and
the call shows as before (one line when it ends).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from actors.runtime.llm.types import LlmRequest

EVERY_S = 5.0  # a line per call at most this often, and not before it has run this long


def notes_dir(data_dir: Path | str) -> Path:
    return Path(data_dir) / "run" / "llm-progress"


@dataclass(frozen=True)
class ProgressNotes:
    """The provider's `progress` callback: one JSON note per call in `folder`."""

    folder: Path

    def __call__(self, request: LlmRequest, tokens: int, elapsed_s: float, done: bool = False) -> None:
        path = self.folder / f"{request.hash()}.json"
        try:
            if done:
                path.unlink(missing_ok=True)
                return
            self.folder.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"tokens": tokens, "elapsed_s": round(elapsed_s, 1)}))
            os.replace(tmp, path)
        except OSError:
            pass  # progress is a courtesy: never a reason for a call to fail


def read_note(folder: Path, request_hash: str) -> dict[str, Any] | None:
    try:
        note = json.loads((folder / f"{request_hash}.json").read_text())
    except (OSError, ValueError):
        return None
    return note if isinstance(note, dict) else None


@dataclass
class OpenCalls:
    """Which calls the log shows asked and not yet answered, and what was said of each.
    Pure: times are passed in."""

    open: dict[str, tuple[int, float]] = field(default_factory=dict)  # hash -> (call index, since)
    said: dict[str, tuple[int, float]] = field(default_factory=dict)  # hash -> (tokens, when)

    def seen(self, event: Any, now: float) -> None:
        t = event.type_name
        if t == "LlmRequested":
            self.open[event.request_hash] = (event.call_index, now)
        elif t in ("LlmCompleted", "LlmFailed"):
            self.open.pop(event.request_hash, None)
            self.said.pop(event.request_hash, None)

    def lines(self, now: float, read: Callable[[str], dict[str, Any] | None]) -> list[str]:
        """A line for each open call that has run `EVERY_S`, whose count moved since the last
        line about it, said at most every `EVERY_S`."""
        out = []
        for request_hash, (index, since) in list(self.open.items()):
            if now - since < EVERY_S:
                continue
            last_tokens, last_when = self.said.get(request_hash, (-1, since - EVERY_S))
            if now - last_when < EVERY_S:
                continue
            note = read(request_hash)
            if note is None:
                continue
            tokens = int(note.get("tokens") or 0)
            if tokens == last_tokens:
                continue
            self.said[request_hash] = (tokens, now)
            out.append(f"  llm call {index}: {tokens} tokens so far, {now - since:.0f}s")
        return out


class CallWatch:
    """While a run is followed: feed it the run's events (`seen`); a thread prints the
    progress lines on `out`. `stop()` when the run ends."""

    def __init__(self, data_dir: Path | str, out: TextIO | None = None) -> None:
        self.folder = notes_dir(data_dir)
        self.calls = OpenCalls()
        self.out = out or sys.stderr
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="chorus-llm-progress", daemon=True)
        self._thread.start()

    def seen(self, event: Any) -> None:
        with self._lock:
            self.calls.seen(event, time.monotonic())

    def _run(self) -> None:
        while not self._stop.wait(min(1.0, EVERY_S)):
            with self._lock:
                lines = self.calls.lines(time.monotonic(), lambda h: read_note(self.folder, h))
            for line in lines:
                print(line, file=self.out, flush=True)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
