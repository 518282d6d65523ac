"""Fork with an edit: a new run that continues from an LLM call of an agent run whose
completion, or whose prompt, a person replaced ("what if the model had said this instead?",
"what if it had been asked this instead?").

    fork_with_edit(client, run_id, at, completion="...", edited_by="ana")  -> RunHandle
    fork_with_edit(client, run_id, at, prompt=[{"role": ..., "content": ...}, ...])
    fork_with_edit(client, run_id, at, prompt="the new text of the last user message")

`at` is the global position of the call's `LlmRequested` or `LlmCompleted` in the run's lead
agent. The fork's agent stream holds the origin's events before that call, then `AgentForked`.

- A completion edit: then the call with the edited completion (decided on by the agent, as a
  live completion would be), and the agent continues live. The edit is recorded as
  `CompletionEdited` (events/debug.py: who, where, what before and after) on the fork's
  `edit:RUN` stream. A replay re-executes from the edited completion in the log.
- A prompt edit: then `PromptEdited` (events/debug.py: who, where, the messages before and
  after), which the agent folds into its state: the edited call goes to the model live with
  the person's messages in place of the ones the agent would have built, and its answer is
  recorded as usual. A replay asks the same edited prompt (it is in the state) and is served
  that recorded answer: exact, with no live call.

`prepare_edited_fork` writes the fork's log and returns what starts it; `fork_with_edit` then
serves it on Ray (a test can drive it in-process instead).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from actors.runtime.replay.rerun import run_records
from events.base import Event, utcnow
from events.debug import CompletionEdited, PromptEdited

MAX_EDIT_CHARS = 100_000  # an edited completion
MAX_PROMPT_CHARS = 1_000_000  # an edited prompt, all its messages together
MAX_PROMPT_MESSAGES = 500
ROLES = ("system", "user", "assistant", "tool")


def edit_stream(run_id: str) -> str:
    return f"edit:{run_id}"


@dataclass
class EditedFork:
    run_id: str
    kind: Any  # the run kind (it spawns the agent)
    start: Any  # the agent's start command
    settings: Any


def fork_with_edit(client: Any, run_id: str, at: int, **edit: Any) -> Any:
    """The fork (a RunHandle, running). `edit`: `completion=` or `prompt=`, and `edited_by=`,
    `model=`, `llm_params=`, as `prepare_edited_fork` takes them; ValueError for an edit that
    cannot be made."""
    fork = prepare_edited_fork(client, run_id, at, **edit)
    client.ensure_ray()
    return fork.kind.running._spawn(client, fork.run_id, fork.settings, fork.start)


def prepare_edited_fork(
    client: Any,
    run_id: str,
    at: int,
    *,
    completion: str | None = None,
    prompt: list[dict[str, Any]] | str | None = None,
    edited_by: str = "someone",
    model: str | None = None,
    llm_params: dict[str, Any] | None = None,
    new_id: str | None = None,
) -> EditedFork:
    """Write the fork's log (its submission, the copied history, the mark and the edit) and
    return what starts its agent. ValueError, before anything is written, for an edit that
    cannot be made: neither or both of completion and prompt, an empty or too long one, a
    malformed prompt, a position that is not an LLM call of the run's lead agent, a run that
    is not an agent run, an agent that cannot take an edited prompt."""
    from actors.agent.actor import agent_stream
    from actors.agent.replay import agent_streams
    from actors.runtime.client import new_run_id
    from actors.runtime.effects import LlmReturned
    from actors.runtime.registry import Registry
    from actors.runtime.shell import ActorShell
    from actors.agent.events import AgentForked

    if (completion is None) == (prompt is None):
        raise ValueError("give either the completion to put in the model's place or the prompt to send it instead")
    if completion is not None:
        if not completion.strip():
            raise ValueError("give the completion to put in the model's place")
        if len(completion) > MAX_EDIT_CHARS:
            raise ValueError(f"the edited completion is {len(completion)} characters; at most {MAX_EDIT_CHARS}")
    original = client.run_state(run_id)
    kind = Registry.run_kind(original.kind) if original.kind else Registry.default_run_kind()
    records = run_records(client.store, run_id)
    agents = agent_streams(records)
    if not agents or not hasattr(kind, "agent_class"):
        raise ValueError(f"run {run_id} is not an agent run: only an agent's LLM call can be edited")
    lead = next(iter(agents.values()))
    position = {rec.event.event_id: rec.position for rec in records}
    chosen = next((e for e in lead if position[e.event_id] == at), None)
    if chosen is None or chosen.type_name not in ("LlmRequested", "LlmCompleted"):
        raise ValueError(f"position {at} is not an LLM call of run {run_id}'s agent (its LlmRequested or LlmCompleted)")
    call = chosen.call_index  # type: ignore[attr-defined]
    request = next(e for e in lead if e.type_name == "LlmRequested" and e.call_index == call)  # type: ignore[attr-defined]
    answer = next((e for e in lead if e.type_name == "LlmCompleted" and e.call_index == call), None)  # type: ignore[attr-defined]
    if completion is not None and answer is None:
        raise ValueError(f"LLM call {call} of run {run_id} has no completion to edit")
    prefix = [e for e in lead if position[e.event_id] < position[request.event_id]]
    new_id = new_id or new_run_id()
    stream = agent_stream(new_id)
    messages = list(getattr(request, "messages", []))
    note: Event
    if prompt is not None:
        edited = edited_prompt(messages, prompt)
        note = PromptEdited(
            origin_run=run_id, origin_position=at, actor=stream, call_index=call,
            original=messages, edited=edited, edited_by=edited_by,
        )  # fmt: skip
        behaviour = kind.agent_class()()
        folded = behaviour.evolve(behaviour.initial(), note.stamp(run_id=new_id, command_id="edit"))
        if getattr(folded, "prompt_edit", None) is None:
            raise ValueError(f"run {run_id}'s kind ({original.kind or kind.name}) cannot take an edited prompt")
    else:
        note = CompletionEdited(
            origin_run=run_id, origin_position=at, actor=stream, call_index=call,
            original=getattr(answer, "content", "") or "", edited=completion or "", edited_by=edited_by,
        )  # fmt: skip
    settings = client.ensure_llm()
    origin = f"{run_id}@{at}"
    what = "prompt" if prompt is not None else "completion"
    client.begin_run(
        new_id, goal=original.goal, kind=original.kind,
        params={**original.params, "forked_from": origin, "model": model, "llm_params": llm_params, "edited": f"LLM call {call} ({what})"},
        budget=original.budget, forked_from=origin,
    )  # fmt: skip
    client.store.append(stream, [_copy(e, new_id) for e in prefix], 0)
    forked = AgentForked(origin_run=run_id, origin_position=at, model=model, params=llm_params)
    client.store.append(stream, [forked.stamp(run_id=new_id, command_id="fork")], len(prefix))
    if isinstance(note, PromptEdited):
        # on the agent's own stream: its state carries the edit until the call is made
        client.store.append(stream, [note.stamp(run_id=new_id, command_id="edit", timestamp=utcnow())], len(prefix) + 1)
    else:
        done = type(answer).model_validate({**answer.payload(), "content": completion, "parsed": None, "run_id": new_id})  # type: ignore[union-attr]
        agent = ActorShell(kind.agent_class()(), stream, client.store, run_id=new_id).load()
        agent.handle(LlmReturned(key=f"edit-{call}", events=[type(request).model_validate({**request.payload(), "run_id": new_id}), done]))
        client.store.append(edit_stream(new_id), [note.stamp(run_id=new_id, command_id="edit", timestamp=utcnow())], 0)
    start = kind.agent_class()().start_command(prefix[0])
    return EditedFork(run_id=new_id, kind=kind, start=start, settings=settings)


def edited_prompt(messages: list[dict[str, Any]], prompt: list[dict[str, Any]] | str) -> list[dict[str, Any]]:
    """The messages to send instead: `prompt` itself (a list of {"role", "content"}), or, for
    a text, the call's messages with the last user message's content replaced by it.
    ValueError for a malformed or too long prompt."""
    if isinstance(prompt, str):
        if not prompt.strip():
            raise ValueError("the edited prompt is empty")
        last = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=None)
        if last is None:
            raise ValueError("the call has no user message to replace: give the whole prompt as a list of messages")
        out = [dict(m) for m in messages]
        out[last]["content"] = prompt
    elif isinstance(prompt, list):
        out = []
        for i, m in enumerate(prompt):
            if not isinstance(m, dict) or set(m) - {"role", "content"} or m.get("role") not in ROLES or not isinstance(m.get("content"), str):
                raise ValueError(f"message {i + 1} of the edited prompt is not {{\"role\": one of {', '.join(ROLES)}, \"content\": text}}")
            out.append({"role": m["role"], "content": m["content"]})
        if not out or not any(m["content"].strip() for m in out):
            raise ValueError("the edited prompt is empty")
    else:
        raise ValueError("the edited prompt is a list of messages or the text of the last user message")
    if len(out) > MAX_PROMPT_MESSAGES:
        raise ValueError(f"the edited prompt has {len(out)} messages; at most {MAX_PROMPT_MESSAGES}")
    size = sum(len(m["content"]) for m in out)
    if size > MAX_PROMPT_CHARS:
        raise ValueError(f"the edited prompt is {size} characters; at most {MAX_PROMPT_CHARS}")
    if out == [{"role": m.get("role"), "content": m.get("content")} for m in messages]:
        raise ValueError("the edited prompt is the call's own prompt: change it, or fork without an edit")
    return out


def _copy(e: Event, run_id: str) -> Event:
    return type(e).model_validate(
        {**e.payload(), "timestamp": e.timestamp, "command_id": e.command_id, "causation_id": e.causation_id, "run_id": run_id}
    )
