"""What a ReAct agent decides: it starts, chooses steps, has steps rejected, answers or fails.

The agent owns these types: `events` registers only the shared ones, and these register when
the agent is imported (its plugin, `actors.agent.kind`; or the research and code-question
workloads that run it). A log naming one of them decodes in a fresh process too, since an
unknown type name loads the plugins first (`events.registry.on_unknown_type`). Stored type
names are unchanged by the move from `events/agent.py`."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from actors.agent.patches import lookup_patched
from events.base import Event
from events.errors import ErrorInfo
from events.registry import event_type, upcaster
from events.runs import Budget, explicit_budget


class ToolSpec(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    signature: str
    description: str
    topic: str = ""  # "module:Class" of the implementation, so any process can import it


# What each grounded rule revision (the integer `AgentStarted.rules` of schema v2 and before)
# meant, as the named patches it added to the one before (actors/agent/patches.py says what
# each patch does). History: never edit it, or recorded runs replay other than they ran.
RULE_REVISIONS: tuple[tuple[str, ...], ...] = (
    (),  # 0: runs before revisions existed, and every run that was not grounded
    ("answer_first", "quote_checks"),
    ("all_names_shown", "only_where"),
    ("head_phrase",),
    ("new_name",),
    ("private_names", "kind_words", "names_one", "restated"),
)


def revision_patches(rules: int) -> list[str]:
    """The patches a run recorded at rule revision `rules` started with. Revisions 6 to 8 were
    experiments, deleted: such a run keeps a patch named for its revision (`rule_revision_6`),
    which no code knows, so it is refused with one clear error when replayed or resumed."""
    patches = [p for revision in RULE_REVISIONS[: rules + 1] for p in revision]
    return patches if rules < len(RULE_REVISIONS) else [*patches, f"rule_revision_{rules}"]


# v2: Budget() became finite (events/runs.py); v3: the rule revision became named patches;
# v4: the checks that came with `lookups` became patch definition_checks
@event_type("AgentStarted", version=4)
class AgentStarted(Event):
    goal: str
    root: str
    tools: list[ToolSpec]
    max_iterations: int
    model: str
    params: dict[str, Any] = {}
    budget: Budget = Budget()
    # Answers must quote a line the tools showed, and pass the verify step (actors/agent/verify.py).
    # False for runs recorded before grounding existed, so they replay as they ran.
    grounded: bool = False
    # The agent reads the definitions the question names before its first model call, and after a
    # refused answer, and shows them as its own notes (not as the model's steps); the model's own
    # lookups are capped. False for runs recorded before, so they replay as they ran. What the
    # verify step checks is the patches' alone (definition_checks came with lookups: v4).
    lookups: bool = False
    # The named behaviour changes the run started with (actors/agent/patches.py): new grounded
    # runs with lookups take every current patch; a run replays with the ones it recorded.
    patches: list[str] = []


@upcaster("AgentStarted", from_version=1)
def _agentstarted_v1(payload: dict[str, Any]) -> dict[str, Any]:
    return explicit_budget(payload)  # written when Budget() was unlimited: it stays so


def rules_as_patches(payload: dict[str, Any]) -> dict[str, Any]:
    """A payload holding a rule revision (`rules`, absent: 0), with its patches in its place."""
    out = {k: v for k, v in payload.items() if k != "rules"}
    return {**out, "patches": revision_patches(int(payload.get("rules") or 0))}


@upcaster("AgentStarted", from_version=2)
def _agentstarted_v2(payload: dict[str, Any]) -> dict[str, Any]:
    return rules_as_patches(payload)


def lookups_as_patches(payload: dict[str, Any]) -> dict[str, Any]:
    """A payload from before patch definition_checks: a run with lookups ran its checks, so has it."""
    return {**payload, "patches": lookup_patched(payload.get("patches") or [], bool(payload.get("lookups")))}


@upcaster("AgentStarted", from_version=3)
def _agentstarted_v3(payload: dict[str, Any]) -> dict[str, Any]:
    return lookups_as_patches(payload)


@event_type("StepDecided")
class StepDecided(Event):
    """The model chose a tool call; the tool result follows as ToolCalled/ToolReturned."""

    iteration: int
    thought: str
    action: str
    args: dict[str, Any]
    # Decided by the agent itself (a lookup of a name), not by the model: shown as a note.
    auto: bool = False


@event_type("StepRejected")
class StepRejected(Event):
    """The model's step was not run (unparseable, unknown tool, a repeat): the observation says why."""

    iteration: int
    thought: str
    action: str
    args: dict[str, Any]
    reason: str
    observation: str


@event_type("AnswerGiven")
class AnswerGiven(Event):
    iteration: int
    thought: str
    answer: str  # wrapped in <answer> tags


@event_type("AgentFailed")
class AgentFailed(Event):
    error: ErrorInfo


@event_type("AgentForked")
class AgentForked(Event):
    """This stream's earlier events were copied from another run; from here on it runs live,
    optionally with another model or parameters."""

    origin_run: str
    origin_position: int
    model: str | None = None
    params: dict[str, Any] | None = None
