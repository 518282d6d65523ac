"""The CLI's lines while an LLM call streams: which calls are open, when a line is due."""

from __future__ import annotations

import io
import time
from typing import Any

from actors.runtime.llm.call_progress import CallWatch, OpenCalls
from events.effects import LlmCompleted, LlmFailed, LlmRequested
from events.errors import ErrorInfo


def asked(h: str, index: int) -> LlmRequested:
    return LlmRequested(model="m", messages=[], request_hash=h, call_index=index)


def test_a_line_once_the_call_has_run_a_while_and_only_when_its_count_moved() -> None:
    calls = OpenCalls()
    calls.seen(asked("h1", 3), now=100.0)
    notes: dict[str, dict[str, Any]] = {"h1": {"tokens": 12}}
    read = notes.get
    assert calls.lines(102.0, read) == []  # too early to bother anyone
    assert calls.lines(105.0, read) == ["  llm call 3: 12 tokens so far, 5s"]
    assert calls.lines(107.0, read) == []  # said just now
    assert calls.lines(111.0, read) == []  # nothing moved
    notes["h1"] = {"tokens": 40}
    assert calls.lines(112.0, read) == ["  llm call 3: 40 tokens so far, 12s"]


def test_an_answered_call_says_no_more() -> None:
    calls = OpenCalls()
    calls.seen(asked("h1", 1), now=0.0)
    calls.seen(asked("h2", 2), now=0.0)
    calls.seen(LlmCompleted(request_hash="h1", call_index=1, content="x"), now=1.0)
    calls.seen(LlmFailed(request_hash="h2", call_index=2, error=ErrorInfo(type="llm_error", reason="timeout", message="m")), now=1.0)
    assert calls.lines(60.0, lambda h: {"tokens": 5}) == []


def test_a_call_with_no_note_says_nothing() -> None:
    """The call runs on another machine, or its endpoint has not sent a token yet."""
    calls = OpenCalls()
    calls.seen(asked("h1", 1), now=0.0)
    assert calls.lines(60.0, lambda h: None) == []


def test_the_watch_stops() -> None:
    out = io.StringIO()
    watch = CallWatch("/nonexistent-chorus-dir", out=out)
    watch.seen(asked("h1", 1))
    watch.stop()
    assert not watch._thread.is_alive() and out.getvalue() == ""


def test_following_a_run_shows_the_tokens_so_far(tmp_path: Any, monkeypatch: Any, capsys: Any) -> None:
    """`chorus run` (console.follow_run): while a call streams, a line with its tokens so far."""
    from types import SimpleNamespace

    from actors.runtime import console
    from actors.runtime.llm import call_progress
    from actors.runtime.llm.call_progress import ProgressNotes, notes_dir
    from actors.runtime.llm.types import LlmRequest

    monkeypatch.setattr(call_progress, "EVERY_S", 0.1)
    request = LlmRequest(model="m", messages=[{"role": "user", "content": "hi"}])
    notes = ProgressNotes(notes_dir(tmp_path))
    said: list[str] = []

    def events() -> Any:
        yield SimpleNamespace(event=asked(request.hash(), 1))
        notes(request, 17, 2.0)  # the actor streaming the call
        deadline = time.monotonic() + 30  # liveness bound: the line comes within a tick or two
        while not any("17 tokens so far" in line for line in said) and time.monotonic() < deadline:
            said.extend(capsys.readouterr().err.splitlines())
            time.sleep(0.05)
        notes(request, 20, 3.0, done=True)
        yield SimpleNamespace(event=LlmCompleted(request_hash=request.hash(), call_index=1, content="x"))

    client = SimpleNamespace(settings=SimpleNamespace(data_dir=tmp_path), run_state=lambda run_id: SimpleNamespace(kind=None))
    handle = SimpleNamespace(run_id="r1", client=client, events=events,
                             wait=lambda: SimpleNamespace(ok=True, answer="done", error=None, status="completed"))  # fmt: skip
    assert console.follow_run(handle) == 0
    said.extend(capsys.readouterr().err.splitlines())
    assert any(line.startswith("  llm call 1: 17 tokens so far") for line in said), said


def test_an_answer_after_retries_says_so() -> None:
    from actors.runtime.progress import describe

    failure = ErrorInfo(type="llm_error", reason="unreachable", message="connection refused")
    done = LlmCompleted(request_hash="h", call_index=2, content="x", prompt_tokens=9, completion_tokens=3,
                        latency_s=4.0, retries=[failure])  # fmt: skip
    assert describe(done) == "  llm call 2: 9+3 tokens, 4.0s, after 1 failed attempt(s): unreachable"
