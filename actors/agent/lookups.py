"""The agent's own lookups and what they allow: the definition it reads for the model before
the first step (`opening_lookup`), when the model's next step may only be the answer
(`answer_first`), which names it has looked up, and the patches new runs start with
(`new_patches`). Pure: state in, decisions out.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import TYPE_CHECKING

from actors.agent.asks import ask_of, names_shown, question_name
from actors.agent.events import StepDecided, ToolSpec
from actors.agent.evidence import spans
from actors.agent.patches import (
    GROUNDED_PATCHES,
    LOOKUP_PATCHES,
    LOOP_PATCHES,
    NAMED_FILE_SEARCH,
    PLAIN_PATCHES,
    patched,
)
from actors.agent.policy import REPEAT_MARK
from actors.agent.verify import shows_a_value
from actors.tools.search import query_terms

if TYPE_CHECKING:
    from actors.agent.react import AgentState


FIND_DEFINITION = "find_definition"
# The model's own definition lookups per run, once the agent makes its own (`lookups`): past
# this, it answers from what the definitions showed, or says "not found".
MAX_LOOKUPS = 3
LOOKUP_LIMIT = (
    f"You have looked up {MAX_LOOKUPS} definitions already. Answer now from the lines they showed "
    '(quote the line that states the answer), or answer "Not found in the code".'
)
NO_DEFINITION = "No definition named"
NOT_LOOKED = (
    "You have not looked at any code yet, so that answer would be a guess. Call a tool first: "
    "search with a word or a name from the goal."
)


# Tools that show code or documentation by line: an agent with one of them answers with a quoted line.
CODE_TOOLS = frozenset(
    {"search_files", "read_file", "find_definition", "read_code", "search_keyword", "semantic_file_search",
     "repository_search", "get_repo_documentation"}
)


def reads_code(tools: list[ToolSpec]) -> bool:
    """Whether answers are grounded by default: the agent has a tool that shows code."""
    return any(t.name in CODE_TOOLS for t in tools)


def looked(state: AgentState) -> bool:
    """Whether a tool has shown the agent anything yet (an error or a refused step is not code)."""
    return state.steps_dropped > 0 or any(
        h.action and h.action != "answer" and not h.observation.startswith(("Error", REPEAT_MARK, NO_DEFINITION))
        for h in state.history
    )


READ_FILE = "read_file"
SEARCH_FILES = "search_files"
OPENING = "The question names"  # the thought of the agent's opening lookup


def named_scope(state: AgentState) -> list[tuple[str, int, int]]:
    """The spans of the definition the question names, as the agent's opening lookup showed
    them (none in runs without the agent's own lookups)."""
    if not state.lookups:
        return []
    first = next((h for h in state.history if h.auto and h.thought.startswith(OPENING)), None)
    return spans(first.observation) if first is not None else []


def new_patches(grounded: bool, lookups: bool) -> list[str]:
    """The patches a new run starts with (AgentStarted.patches): every grounded one and the
    lookups' own for a grounded run with the agent's own lookups, none of those for a grounded
    run without (its paths are the old ones), the plain agent's for a run that is not grounded;
    and the loop's own for each."""
    if not grounded:
        return [*PLAIN_PATCHES, *LOOP_PATCHES]
    return [*GROUNDED_PATCHES, *LOOKUP_PATCHES, *LOOP_PATCHES] if lookups else list(LOOP_PATCHES)


ANSWER_FIRST_ASKS = ("value", "base", "override", "name", "any")  # a message is raised elsewhere
NOT_IN_DEFINITION = (
    "The definition does not show it, then. Search for it now: search_files with a name or a word "
    "from the goal, or find_definition of another name you saw."
)


SHOWN_IN_PART = ("more member lines;", "(the definition goes on to line")  # find_definition's notes on a cut definition


def answer_first(state: AgentState) -> bool:
    """Whether the model's next step may only be the answer: its first step, right after the
    agent's opening lookup found the definition the question names (patch answer_first). Not
    for a question asking for a message (raised elsewhere than its class's definition), nor for
    a value the definition shows no likely line for, nor, for other questions, when the
    definition was shown only in part. With patch all_names_shown, only when the definition
    shows every name the question gives."""
    if not patched(state, "answer_first") or state.iteration > 0 or len(state.history) != 1:
        return False
    first, question = state.history[0], question_of(state.goal)
    if not (first.auto and first.thought.startswith(OPENING)) or first.observation.startswith(NO_DEFINITION):
        return False
    if patched(state, "all_names_shown") and not names_shown(question, first.observation, state.patches):
        return False  # the question names more than this definition shows: what it asks may be elsewhere
    ask = ask_of(question, state.patches)
    if ask == "value":  # only when a line of the definition may state it (else the model picks any number)
        return shows_a_value(question, first.observation)
    # anything else: only when the definition was shown whole (a long class's outline is cut)
    return ask in ANSWER_FIRST_ASKS and not any(cut in first.observation for cut in SHOWN_IN_PART)


def own_lookups(state: AgentState) -> int:
    """The definitions the model itself asked for (the agent's own lookups aside)."""
    return sum(1 for h in state.history if h.action == FIND_DEFINITION and not h.auto)


def opening_lookup(goal: str, tool_names: list[str], patches: Collection[str] = ()) -> StepDecided | None:
    """Before the model's first step, the agent reads the definition of the most specific code
    name the question gives (`Class.member`, CamelCase, CONSTANT, snake_case; with patch
    private_names with a leading underscore too), if it has find_definition: a question about a
    named definition starts with its lines in view."""
    if FIND_DEFINITION not in tool_names:
        return None
    name = question_name(question_of(goal), patches)
    if name is None:
        return None
    return StepDecided(
        iteration=0, thought=f"{OPENING} {name}: read its definition.", action=FIND_DEFINITION,
        args={"name": name}, auto=True,
    )


# A file a goal names: a path ending in a text or code file's extension (`README.md`, `docs/cli.md`).
NAMED_FILE = re.compile(
    r"(?<![\w/.-])((?:[\w.-]+/)*[\w-]+\.(?:md|rst|txt|py|toml|ya?ml|json|cfg|ini|js|ts|html|css|sh|csv|sql|java|go|rs|c|h))(?![\w/-])"
)


def opening_read(goal: str, tool_names: list[str], patches: Collection[str] = ()) -> StepDecided | None:
    """Before the model's first step of a plain run (patch files_prompt), the agent reads the
    first file the goal names, if it has read_file: a question about a file starts with the
    file in view, not with a search of every file for its words. With patch
    named_file_search, a goal with words besides the file's name (and search_files) starts
    with that file's lines holding those words instead (`search_files(query, path)`; a short
    file is shown whole, one without them from its first line): "what does README.md say
    about replay?" sees every line of README.md on replay, not its first fifty."""
    question = question_of(goal)
    m = NAMED_FILE.search(question) if READ_FILE in tool_names else None
    if m is None:
        return None
    path = m.group(1)
    if patched(patches, NAMED_FILE_SEARCH) and SEARCH_FILES in tool_names:
        words = [t.label for t in query_terms(question[: m.start(1)] + " " + question[m.end(1) :]) if t.kind == "word"]
        if words:
            query = " ".join(words)
            return StepDecided(
                iteration=0, thought=f"The goal names {path}: find {query} in it.", action=SEARCH_FILES,
                args={"query": query, "path": path}, auto=True,
            )
    return StepDecided(iteration=0, thought=f"The goal names {path}: read it.", action=READ_FILE, args={"path": path}, auto=True)


def question_of(goal: str) -> str:
    """The question in a goal (a researcher's goal adds its plan after a blank line)."""
    return goal.strip().split("\n\n", 1)[0]
