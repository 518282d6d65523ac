"""The Builder (seed 004): one roadmap item's turn, from prompt to BatonPacket.

Its prompt is the seed's `roadmap[N] + context + defect_capsule` (actors.relay.prompts): the
item, the bounded baton of recent turns, similar past turns from memory, the current files,
and on a retry the defect capsule. A retry starts over: it is shown the files as the item
found them, not the failed attempt (the baton says what that attempt did, the capsule why it
failed), because a small model shown its own failed code writes it out again (seen on
HumanEval: every such retry of the 1.5B model repeated the failed body verbatim, even when
sampled warmer). Its edits still apply to the workspace as it is. Its one model call goes through `effects`, which records
it in the builder's stream before the reply is read (actors.relay.recording), so a replay
builds the same turn with no model.

The reply becomes file edits (actors.relay.edits: whole files, diffs; code with no path
label goes to the one file the item is about, if there is one) applied to a scratch copy of
the workspace (actors.relay.workspace_files; the relay's workspace is the fold of its
WorkspaceChanged events, `state.files`; nothing here touches a person's folder). An edit
that does not apply, or a model call that failed, is an empty change set and a verification
hint saying why: the verifier then fails the turn and the builder's retry reads the reason.
Never a crash.

Memory of past turns is a lookup `memory(text) -> [past turn text]`, best first; it is
a recorded effect too (tool "memory"), because what it returns shapes the prompt.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from actors.relay.baton import baton_context, make_baton
from actors.relay.edits import FileEdit, parse_edits, target_file
from actors.relay.prompts import builder_request, item_text
from actors.relay.scheduler import BuilderFinished, RelayState
from actors.relay.workspace import changes_between
from actors.relay.workspace_files import apply_edits
from actors.runtime.perform import ToolInvoker
from events.effects import LlmCompleted, LlmFailed, ToolReturned

Memory = Callable[[str], list[str]]


class Builder:
    def __init__(
        self,
        model: str = "",
        params: dict[str, Any] | None = None,
        memory: Memory | None = None,
    ) -> None:
        self.model = model
        self.params = dict(params or {})
        self.memory = memory

    def invoker(self) -> ToolInvoker:
        """The builder's one tool, for `LiveEffects`: the memory lookup."""

        def invoke(name: str, args: dict[str, Any]) -> str:
            if name != "memory" or self.memory is None:
                raise ValueError(f"the builder has no tool {name!r}")
            return json.dumps([str(t) for t in self.memory(str(args["query"]))])

        return invoke

    def build(self, state: RelayState, effects: Any) -> BuilderFinished:
        """The turn `state.last_turn_id` on `state.item`, as the scheduler's command."""
        item = state.item
        if item is None or state.last_turn_id is None:
            raise ValueError("the relay is not waiting for a builder turn")
        hints: list[str] = []
        context = self._recall(state, effects, hints)
        request = builder_request(
            item,
            context=context,
            baton=baton_context(state.batons),
            defect=state.current_defect,
            files=state.item_files if state.current_defect is not None else state.files,
            model=self.model,
            params=self.params,
        )
        recorded = effects.llm(request, state.turn_number)
        outcome = recorded[-1]
        reply, tokens = "", 0
        if isinstance(outcome, LlmCompleted):
            reply, tokens = (
                outcome.content,
                outcome.prompt_tokens + outcome.completion_tokens,
            )
        elif isinstance(outcome, LlmFailed):
            hints.append(f"the builder's model call failed ({outcome.error.message}): no files changed")
        default = target_file([item.title, item.details, *item.acceptance_criteria], state.files)
        edits, after = _apply(reply, state.files, hints, default)
        changes = changes_between(state.files, after)
        baton = make_baton(
            reply,
            edits,
            [c["path"] for c in changes],
            hints,
            metadata={"turn_number": state.turn_number, "roadmap_index": state.index},
        )
        return BuilderFinished(
            key=f"built:{state.turn_number}",
            turn_id=state.last_turn_id,
            baton=baton,
            changes=changes,
            tokens=tokens,
        )

    def _recall(self, state: RelayState, effects: Any, hints: list[str]) -> list[str]:
        if self.memory is None or state.item is None:
            return []
        args = {"turn_id": state.last_turn_id, "query": item_text(state.item)}
        returned = effects.tool("memory", args, None)[-1]
        if not isinstance(returned, ToolReturned) or not returned.ok:
            return []
        try:
            found = json.loads(returned.output)
        except ValueError:
            return []
        return [str(t) for t in found] if isinstance(found, list) else []


def _apply(
    reply: str, files: dict[str, str], hints: list[str], default: str | None = None
) -> tuple[list[FileEdit], dict[str, str]]:
    """The edits in `reply` and the workspace after them; the files unchanged (and a hint
    saying why) when the reply has no edits or they do not apply. Code with no path goes to
    `default`, the one file the item is about, when there is one (`edits.target_file`)."""
    try:
        edits = parse_edits(reply, default_path=default)
    except ValueError as e:
        hints.append(f"the builder's reply could not be read as edits: {e}")
        return [], dict(files)
    if not edits:
        if reply:
            hints.append("the builder's reply held no file edits")
        return [], dict(files)
    with tempfile.TemporaryDirectory(prefix="chorus-build-") as tmp:
        root = Path(tmp)
        for path, text in files.items():
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        try:
            changed = apply_edits(root, edits)
        except (ValueError, OSError) as e:
            hints.append(f"the edits did not apply, no files changed: {e}")
            return edits, dict(files)
        after = dict(files)
        for rel in changed:
            target = root / rel
            if target.is_file():
                after[rel] = target.read_text(encoding="utf-8")
            else:
                after.pop(rel, None)
    return edits, after
