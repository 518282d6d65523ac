"""Fork with an edit: a new run that continues from an LLM call of an agent run whose
completion a person replaced ("what if the model had said this instead?").

    fork_with_edit(client, run_id, at, completion="...", edited_by="ana")  -> RunHandle

`at` is the global position of the call's `LlmRequested` or `LlmCompleted` in the run's lead
agent. The fork's agent stream holds the origin's events before that call, `AgentForked`,
then the call with the edited completion (decided on by the agent, as a live completion
would be), and the agent continues live from there. The edit itself is recorded as
`CompletionEdited` (events/debug.py: who, where, what before and after) on the fork's
`edit:RUN` stream, so the fork's page says it was edited, and a replay of the fork is exact:
the completion it re-executes from is the edited one in the log.

Edits of a prompt are not done yet (the agent builds its prompts from its state): ValueError.
"""

from __future__ import annotations

from typing import Any

from actors.runtime.replay.rerun import run_records
from events.base import Event
from events.debug import CompletionEdited

MAX_EDIT_CHARS = 100_000


def edit_stream(run_id: str) -> str:
    return f"edit:{run_id}"


def fork_with_edit(
    client: Any,
    run_id: str,
    at: int,
    *,
    completion: str | None = None,
    prompt: str | None = None,
    edited_by: str = "someone",
    model: str | None = None,
    llm_params: dict[str, Any] | None = None,
) -> Any:
    """The fork (a RunHandle, running). ValueError for an edit that cannot be made: no
    completion given, one too long, a position that is not an LLM call of the run's lead
    agent, a run that is not an agent run."""
    from actors.agent.actor import agent_stream
    from actors.agent.kind import agent_streams
    from actors.runtime.client import new_run_id
    from actors.runtime.effects import LlmReturned
    from actors.runtime.registry import Registry
    from actors.runtime.shell import ActorShell
    from events.agent import AgentForked

    if prompt is not None:
        raise ValueError("editing a prompt is not supported yet: edit the completion")
    if completion is None or not completion.strip():
        raise ValueError("give the completion to put in the model's place")
    if len(completion) > MAX_EDIT_CHARS:
        raise ValueError(f"the edited completion is {len(completion)} characters; at most {MAX_EDIT_CHARS}")
    original = client.run_state(run_id)
    kind = Registry.run_kind(original.agent) if original.agent else Registry.default_run_kind()
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
    if answer is None:
        raise ValueError(f"LLM call {call} of run {run_id} has no completion to edit")
    prefix = [e for e in lead if position[e.event_id] < position[request.event_id]]
    settings = client.ensure_llm()
    client.ensure_ray()
    new_id = new_run_id()
    origin = f"{run_id}@{at}"
    client.begin_run(
        new_id, goal=original.goal, agent=original.agent,
        params={**original.params, "forked_from": origin, "model": model, "llm_params": llm_params, "edited": f"LLM call {call}"},
        budget=original.budget, forked_from=origin,
    )  # fmt: skip
    stream = agent_stream(new_id)
    client.store.append(stream, [_copy(e, new_id) for e in prefix], 0)
    forked = AgentForked(origin_run=run_id, origin_position=at, model=model, params=llm_params)
    client.store.append(stream, [forked.stamp(run_id=new_id, command_id="fork")], len(prefix))
    edited = type(answer).model_validate({**answer.payload(), "content": completion, "parsed": None, "run_id": new_id})
    agent = ActorShell(kind.agent_class()(), stream, client.store, run_id=new_id).load()
    agent.handle(LlmReturned(key=f"edit-{call}", events=[type(request).model_validate({**request.payload(), "run_id": new_id}), edited]))
    note = CompletionEdited(
        origin_run=run_id, origin_position=at, actor=stream, call_index=call,
        original=getattr(answer, "content", "") or "", edited=completion, edited_by=edited_by,
    )  # fmt: skip
    client.store.append(edit_stream(new_id), [note.stamp(run_id=new_id, command_id="edit")], 0)
    start = kind.agent_class()().start_command(prefix[0])
    return kind._spawn(client, new_id, settings, start)


def _copy(e: Event, run_id: str) -> Event:
    return type(e).model_validate(
        {**e.payload(), "timestamp": e.timestamp, "command_id": e.command_id, "causation_id": e.causation_id, "run_id": run_id}
    )
