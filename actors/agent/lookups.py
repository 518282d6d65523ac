"""The agent's own lookups and what they allow: the definition it reads for the model before
the first step (`opening_lookup`), when the model's next step may only be the answer
(`answer_first`, and the line-number answer of rule revisions 6 and 7), which names it has
looked up, and the rule revision new runs start with (`RULES`). Pure: state in, decisions out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from actors.agent.asks import ALL_NAMES_RULES, ask_of, names_shown, opening_names, question_name
from actors.agent.evidence import shown_lines, spans
from actors.agent.policy import REPEAT_MARK
from actors.agent.prompt import HistoryItem
from actors.agent.verify import shows_a_value
from actors.tools.search import STOP_WORDS
from events.agent import StepDecided, ToolSpec

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
OPENING = "The question names"  # the thought of the agent's opening lookup


def named_scope(state: AgentState) -> list[tuple[str, int, int]]:
    """The spans of the definition the question names, as the agent's opening lookup showed
    them (none in runs without the agent's own lookups)."""
    if not state.lookups:
        return []
    first = next((h for h in state.history if h.auto and h.thought.startswith(OPENING)), None)
    return spans(first.observation) if first is not None else []


RULES = 5  # the rule revision new grounded runs with lookups start with (AgentStarted.rules)
ANSWER_FIRST_ASKS = ("value", "base", "override", "name", "any")  # a message is raised elsewhere
NOT_IN_DEFINITION = (
    "The definition does not show it, then. Search for it now: search_files with a name or a word "
    "from the goal, or find_definition of another name you saw."
)


SHOWN_IN_PART = ("more member lines;", "(the definition goes on to line")  # find_definition's notes on a cut definition


def answer_first(state: AgentState) -> bool:
    """Whether the model's next step may only be the answer: its first step, right after the
    agent's opening lookup found the definition the question names (rules ≥ 1). Not for a
    question asking for a message (raised elsewhere than its class's definition), nor for a
    value the definition shows no likely line for, nor, for other questions, when the
    definition was shown only in part. From rule revision 2, only when the definition shows
    every name the question gives."""
    if state.rules < 1 or state.iteration > 0 or len(state.history) != 1:
        return False
    first, question = state.history[0], question_of(state.goal)
    if not (first.auto and first.thought.startswith(OPENING)) or first.observation.startswith(NO_DEFINITION):
        return False
    if state.rules >= 2 and not names_shown(question, first.observation, state.rules):
        return False  # the question names more than this definition shows: what it asks may be elsewhere
    ask = ask_of(question, state.rules)
    if ask == "value":  # only when a line of the definition may state it (else the model picks any number)
        return shows_a_value(question, first.observation)
    # anything else: only when the definition was shown whole (a long class's outline is cut)
    return ask in ANSWER_FIRST_ASKS and not any(cut in first.observation for cut in SHOWN_IN_PART)


# In rule revisions 6 and 7 the answer-first step picks a line number (`answer_lines`). It was
# level with revision 5 on two held-out packages, and the model once copied the step's note into
# its answer; revision 8 answers as 5 did.
LINE_RULES = 6
MAX_RULES = ALL_NAMES_RULES  # the newest rule revision a run may ask for (7, 8: asks.opening_names; 7: verify's named values)


def answer_lines(state: AgentState) -> dict[int, tuple[str, str]]:
    """Rule revision 6: the lines the opening lookup showed of the definition the question
    names (line number → path, text), which the answer-first step chooses from; empty for
    earlier runs, or when the lookup showed lines of more than one file."""
    if not LINE_RULES <= state.rules < ALL_NAMES_RULES or not state.history:  # revision 8 drops it
        return {}
    scope = named_scope(state)
    files = {p for p, _, _ in scope}
    if len(files) != 1:
        return {}
    shown = shown_lines([state.history[0].observation])
    path = files.pop()
    lines = next((ls for p, ls in shown.items() if p == path), {})
    return {n: (path, text) for n, text in lines.items() if any(a <= n <= b for _, a, b in scope) and text.strip()}


def with_chosen_line(state: AgentState, args: dict[str, Any], parsed: Any) -> dict[str, Any]:
    """An answer-first step's args under rule revision 6: the `line` the reply chose (read from
    the reply itself, `parsed`, as the step parser keeps no line) as the source and quote the
    verify step checks, the line's text as the tool showed it. Args that already cite a
    source, or a line the step could not choose, are left as they are."""
    if args.get("source") or args.get("quote") or not isinstance(parsed, dict):
        return args
    reply_args = parsed.get("args")
    try:
        n = int(reply_args.get("line"))  # type: ignore[union-attr]
    except (AttributeError, TypeError, ValueError):
        return args
    chosen = answer_lines(state).get(n)
    if chosen is None:
        return args
    path, text = chosen
    return {**args, "source": f"{path}:{n}", "quote": text.strip()}


def looked_up(step: HistoryItem, rules: int) -> list[str]:
    """The names a find_definition step asked for: its name; from rule revision 8, for the
    opening lookup's first_of, every name up to the one it found (the rest were not tried)."""
    if rules < ALL_NAMES_RULES or "first_of" not in step.args:
        return [str(step.args.get("name", ""))]
    names = [str(n) for n in step.args.get("first_of") or []]
    found = step.observation.split(" is defined in ", 1)[0].split()[-1:] if " is defined in " in step.observation.split("\n", 1)[0] else []
    last = found[0].split("(")[0].rpartition(".")[2] if found else ""
    cut = next((i for i, n in enumerate(names) if n.rpartition(".")[2] == last), len(names) - 1)
    return names[: cut + 1]


def own_lookups(state: AgentState) -> int:
    """The definitions the model itself asked for (the agent's own lookups aside)."""
    return sum(1 for h in state.history if h.action == FIND_DEFINITION and not h.auto)


def opening_lookup(goal: str, tool_names: list[str], rules: int = 0) -> StepDecided | None:
    """Before the model's first step, the agent reads the definition of the most specific code
    name the question gives (`Class.member`, CamelCase, CONSTANT, snake_case; from rule
    revision 5 with a leading underscore too), if it has find_definition: a question about a
    named definition starts with its lines in view. From rule revision 7, a question with none
    of those has find_definition show the first of its dotted names and plain words the code
    defines (`asks.lookup_words`); from 8, every question does, its code names first
    (`asks.opening_names`)."""
    if FIND_DEFINITION not in tool_names:
        return None
    name = question_name(question_of(goal), rules)
    words = opening_names(question_of(goal), rules, STOP_WORDS)
    if words:
        thought = (
            f"{OPENING} {name}: read its definition, or the next of its names the code defines." if name is not None
            else f"{OPENING} code in plain words; read the first of {', '.join(words[:4])}, ... that the code defines."
        )
        return StepDecided(iteration=0, thought=thought, action=FIND_DEFINITION, args={"first_of": words}, auto=True)
    if name is None:
        return None
    return StepDecided(
        iteration=0, thought=f"{OPENING} {name}: read its definition.", action=FIND_DEFINITION,
        args={"name": name}, auto=True,
    )


def question_of(goal: str) -> str:
    """The question in a goal (a researcher's goal adds its plan after a blank line)."""
    return goal.strip().split("\n\n", 1)[0]
