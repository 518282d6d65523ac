"""A run with an LLM call in flight, as the log and the provider leave it while a streamed
call runs: recorded in-process up to the second call's LlmRequested (no answer), and the
provider's progress note for it written by the provider's own writer
(actors.runtime.llm.call_progress.ProgressNotes)."""

from __future__ import annotations

from pathlib import Path

from actors.agent.actor import agent_stream
from actors.runtime.llm.call_progress import ProgressNotes, notes_dir
from actors.runtime.llm.types import LlmRequest
from events.effects import LlmCompleted, LlmRequested
from events.store import EventStore
from tests.support import fake_llm
from tests.support.recording import record_run


class _Held(BaseException):
    """The scripted model's second call does not come back."""


def _held(request: LlmRequest) -> str:
    if fake_llm.step_of(request) == 2:
        raise _Held()
    return fake_llm.search_read_answer(request)


def run_with_open_call(store: EventStore, root: Path, run_id: str) -> LlmRequest:
    """Run `run_id`: its first call answered, its second asked and open. Returns that request."""
    root.mkdir(parents=True, exist_ok=True)
    try:
        record_run(store, root, script=_held, run_id=run_id)
    except _Held:
        pass
    stream = agent_stream(run_id)
    version = max(r.event.version for r in store.read_all(run_id=run_id) if r.event.stream_id == stream)
    request = LlmRequest(model="m", messages=[{"role": "user", "content": "step 2"}])
    asked = LlmRequested(
        run_id=run_id, model=request.model, messages=request.messages, request_hash=request.hash(), call_index=2
    )
    store.append(stream, [asked], version)
    return request


def answer(store: EventStore, run_id: str, request: LlmRequest) -> None:
    """The open call's answer reaches the log (the run itself stays where it is)."""
    stream = agent_stream(run_id)
    version = max(r.event.version for r in store.read_all(run_id=run_id) if r.event.stream_id == stream)
    done = LlmCompleted(run_id=run_id, request_hash=request.hash(), call_index=2, content="{}", completion_tokens=120)
    store.append(stream, [done], version)


def write_progress(data_dir: Path | str, request: LlmRequest, tokens: int, elapsed_s: float) -> None:
    """The note the provider writes about once a second while the call streams."""
    ProgressNotes(notes_dir(data_dir))(request, tokens, elapsed_s)


def end_progress(data_dir: Path | str, request: LlmRequest) -> None:
    """What the provider does when the answer is complete: the note goes."""
    ProgressNotes(notes_dir(data_dir))(request, 0, 0.0, done=True)
