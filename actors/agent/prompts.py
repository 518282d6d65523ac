"""The ReAct agent's prompt, written for a small local model (Qwen2.5-Coder-1.5B).

A small model needs the format shown, not described: the system prompt gives the tools,
the JSON step, a handful of rules and one worked example whose observations are exactly what
the real tools print. The context is bounded: the last `keep_last` steps go in verbatim as
chat turns, older ones as one line each (seed 004's baton), and the last iteration says
"answer now". `parse_step` accepts the many ways a small model phrases a step and, when it
cannot, says precisely what was wrong.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from actors.agent.verify import pointer_lines
from actors.agent.policy import summarize_step

ANSWER = "answer"

# The argument a bare string or a positional argument stands for.
PRIMARY_ARGS: dict[str, str] = {"search_files": "query", "read_file": "path", "find_definition": "name", ANSWER: "answer"}


class AgentStep(BaseModel):
    """One decision of the model: a tool call, or the answer (action "answer")."""

    model_config = ConfigDict(frozen=True)

    thought: str = ""
    action: str
    args: dict[str, Any] = {}


class HistoryItem(BaseModel):
    """A past step with the observation it produced (a tool result, an error, a correction)."""

    model_config = ConfigDict(frozen=True)

    thought: str = ""
    action: str = ""
    args: dict[str, Any] = {}
    observation: str = ""
    auto: bool = False  # a lookup the agent made itself: shown as its note, not as the model's step


class StepProblem(BaseModel):
    """A reply that is not a usable step; `observation` tells the model what to fix."""

    model_config = ConfigDict(frozen=True)

    reason: str  # no_json | no_action | unknown_action | missing_args | empty_answer
    observation: str
    raw: str = ""


def step_schema(tool_names: Sequence[str]) -> dict[str, Any]:
    """JSON schema of a step, `action` limited to the tools and "answer".

    Kept plain (no anyOf, no per-tool args) because llama.cpp turns it into a grammar.
    Pass no tools on the last iteration to force an answer.
    """
    names = [n for n in dict.fromkeys(tool_names) if n != ANSWER] + [ANSWER]
    args: dict[str, Any] = {"type": "object"}
    return {
        "type": "object",
        "properties": {
            "thought": {"type": "string"},
            "action": {"type": "string", "enum": names},
            "args": args,
        },
        "required": ["thought", "action", "args"],
    }


# -- the prompt ---------------------------------------------------------------------------------

# The worked example's files; tests check the observations below are what the tools print.
EXAMPLE_FILES: dict[str, str] = {
    "config.py": (
        "import json\n\n"
        "DEFAULTS = {\"debug\": False}\n\n\n"
        "def load_settings(path):\n"
        "    \"\"\"Read the settings file at path.\"\"\"\n"
        "    with open(path) as f:\n"
        "        data = json.load(f)\n"
        "    return {**DEFAULTS, **data}\n"
    ),
    "app.py": "from config import load_settings\n\nsettings = load_settings(\"settings.json\")\n",
}
EXAMPLE_GOAL = "What does the function that loads the settings file do with the defaults?"
EXAMPLE_SEARCH = {"query": "load settings"}
EXAMPLE_SEARCH_OBSERVATION = """2 files match 'load', 'settings':
config.py (load, settings: 5 matches)
  config.py:6: def load_settings(path):
  config.py:7: \"\"\"Read the settings file at path.\"\"\"
  config.py:9: data = json.load(f)
app.py (load, settings: 8 matches)
  app.py:1: from config import load_settings
  app.py:3: settings = load_settings("settings.json")
Next: read_file(path, start_line) a few lines above a hit, or answer if a line above already shows it."""
EXAMPLE_READ = {"path": "config.py", "start_line": 4}
EXAMPLE_READ_OBSERVATION = """config.py, lines 4-10 of 10:
 4: 
 5: 
 6: def load_settings(path):
 7:     \"\"\"Read the settings file at path.\"\"\"
 8:     with open(path) as f:
 9:         data = json.load(f)
10:     return {**DEFAULTS, **data}
(end of file: 10 lines)"""
# (thought, action, args, the observation it got)
EXAMPLE_STEPS: list[tuple[str, str, dict[str, Any], str]] = [
    ("Search for the key words.", "search_files", EXAMPLE_SEARCH, EXAMPLE_SEARCH_OBSERVATION),
    (
        "config.py line 6 defines load_settings; read it to see the defaults.",
        "read_file",
        EXAMPLE_READ,
        EXAMPLE_READ_OBSERVATION,
    ),
    (
        "Line 10 shows it.",
        ANSWER,
        {
            "answer": "load_settings in config.py reads the JSON settings file and returns its "
            "values laid over DEFAULTS (line 10: return {**DEFAULTS, **data})."
        },
        "",
    ),
]


# The grounded agent's example: the definition found by name, the answer quoting its line.
EXAMPLE_FIND = {"name": "load_settings"}
EXAMPLE_FIND_OBSERVATION = """function load_settings is defined in config.py line 6.
config.py, lines 6-10 of 10:
 6: def load_settings(path):
 7:     \"\"\"Read the settings file at path.\"\"\"
 8:     with open(path) as f:
 9:         data = json.load(f)
10:     return {**DEFAULTS, **data}"""
GROUNDED_EXAMPLE_STEPS: list[tuple[str, str, dict[str, Any], str]] = [
    EXAMPLE_STEPS[0],
    (
        "config.py line 6 defines load_settings; show its definition.",
        "find_definition",
        EXAMPLE_FIND,
        EXAMPLE_FIND_OBSERVATION,
    ),
    (
        "Line 10 shows it.",
        ANSWER,
        {
            "answer": "load_settings in config.py returns the JSON settings file's values laid over DEFAULTS.",
            "source": "config.py:10",
            "quote": "return {**DEFAULTS, **data}",
        },
        "",
    ),
]


def step_json(thought: str, action: str, args: Mapping[str, Any]) -> str:
    return json.dumps({"thought": thought, "action": action, "args": dict(args)}, ensure_ascii=False)


def worked_example(goal: str, steps: Sequence[tuple[str, str, Mapping[str, Any], str]]) -> str:
    """The goal, then each step as the model should write it, followed by the observation it
    got (none after the answer)."""
    lines = [f"Goal: {goal}"]
    for thought, action, args, observation in steps:
        lines.append(step_json(thought, action, args))
        if observation:
            lines += ["Observation:", observation]
    return "\n".join(lines)


def render_system_prompt(
    intro: str,
    tools: Sequence[tuple[str, str, str]],
    *,
    first: str,
    tool_rules: Mapping[str, Sequence[str]],
    rules: Sequence[str],
    example: str = "",
    primary_args: Mapping[str, str] = PRIMARY_ARGS,
    answer_args: Mapping[str, str] | None = None,
) -> str:
    """A system prompt in the shape a small model follows: what it does (`intro`), the tools,
    the JSON step shown for the tool `first` (with its argument from `primary_args`) and for
    the answer, the numbered rules, and the worked `example` if there is one.

    The rules are those `tool_rules` gives for the tools offered (in `tool_rules`' order),
    then the general `rules`. `answer_args` replaces the answer's arguments shown (a grounded
    answer's source and quote)."""
    offered = {name for name, _, _ in tools}
    numbered = [r for tool, said in tool_rules.items() if tool in offered for r in said] + list(rules)
    listed = "\n".join(f"- {sig or name}: {desc}" for name, sig, desc in tools)
    parts = [
        intro,
        f"Tools:\n{listed}",
        "Reply with ONE JSON object and nothing else:\n"
        + step_json("<one short sentence>", first, {primary_args.get(first, "..."): "..."})
        + "\nWhen you know the answer:\n"
        + step_json("<one short sentence>", ANSWER, answer_args or {"answer": "<the answer>"}),
        "Rules:\n" + "\n".join(f"{i}. {r}" for i, r in enumerate(numbered, 1)),
    ]
    if example:
        parts.append("Example:\n" + example)
    return "\n\n".join(parts)


INTRO = (
    "You answer questions about the files in a folder. You work in steps: each step you "
    "call one tool and then see its result (the Observation), until you can answer."
)
TOOL_RULES: dict[str, tuple[str, ...]] = {
    "search_files": (
        "Start with search_files using 1-3 short keywords or a likely name (e.g. "
        "\"snapshot\" or \"SQLiteRecorder\"), not the whole question.",
        "Search results show matching lines as path:LINE: text. If a line already shows the answer, answer at once.",
    ),
    "read_file": ("Otherwise read_file that path with start_line a few lines above the hit.",),
}
RULES = (
    "Never repeat a step you already did. If a search finds nothing, use fewer or other words.",
    "Answer as soon as you can see the answer. In the answer, name the file and the exact "
    "class, function or variable name.",
)


# A grounded answer (actors/agent/evidence.py, actors/agent/verify.py): a quoted line, checked against what the tools showed.
GROUNDED_ANSWER_ARGS = {"answer": "<the answer>", "source": "<path:LINE>", "quote": "<that line, copied exactly>"}
GROUNDED_TOOL_RULES: dict[str, tuple[str, ...]] = {
    **TOOL_RULES,
    "find_definition": (
        "When you know a name (a class, function, constant, or Class.attribute), "
        "find_definition(name) shows its definition; read that, not the search snippet.",
    ),
}
GROUNDED_RULES_COMMON = (
    "Answer only from a line an observation shows: give source (path:LINE) and quote (that line, "
    "copied exactly). A value, a message or a base class must be in the quoted line: if you only "
    "saw a name, look at its definition first.",
    'If the code you saw does not show the answer, answer "Not found in the code".',
)
GROUNDED_RULES = (RULES[0], *GROUNDED_RULES_COMMON)


# Patch files_prompt (actors/agent/patches.py): the plain agent's prompt, for questions about
# files in general: a file the goal names is read, not searched for; a tool that does what the
# goal asks is called, not imitated; the answer says what the files show.
FILE_TOOLS = frozenset({"search_files", "read_file", "find_definition"})
FILES_TOOL_RULES: dict[str, tuple[str, ...]] = {
    "read_file": (
        "If the goal names a file (such as README.md or config.py), read_file that file first, and "
        "read on from a later start_line until you reach the part the goal asks about.",
    ),
    "search_files": (
        "Otherwise start with search_files using 1-3 short keywords or a likely name (e.g. "
        "\"snapshot\" or \"SQLiteRecorder\"), not the whole question.",
        TOOL_RULES["search_files"][1],
        "To see more of a file a search showed, read_file that path with start_line a few lines above the hit.",
    ),
    "find_definition": (
        "When you know a code name (a class, function or constant), find_definition(name) shows its definition.",
    ),
}
def own_tool_rule(own: Sequence[str]) -> str:
    """The rule for tools other than the file tools (a user's own): call, not look up or imitate."""
    they, them = ("it", "it") if len(own) == 1 else ("they", "them")
    return (
        f"{', '.join(own)}: when {they} can do what the goal asks (count, compute, "
        f"convert, look up), call {them} with the text from the goal first; do not look {them} up in the "
        "files or work the answer out yourself."
    )
FILES_RULES = (
    RULES[0],
    "Answer as soon as an observation shows the answer, from what it shows: say it in one to three "
    "sentences and name the file it is in (for code, the exact class, function or variable name).",
)


def files_note(iteration: int, max_iterations: int) -> str:
    """The closing line of the plain agent's prompt (patch files_prompt): `iteration_note`'s,
    asking for what the files say rather than for a name of code."""
    if iteration >= max_iterations:
        return (
            f"Step {iteration} of {max_iterations}: this is your LAST step. You must answer now: "
            'reply with action "answer" and give your best answer from what you have found, and the file.'
        )
    if iteration == 1 or iteration == max_iterations - 1:
        return iteration_note(iteration, max_iterations)
    return (
        f"Step {iteration} of {max_iterations}. Does an observation above show what the goal asks? Then "
        'reply with action "answer" now and say what it shows, in words. Otherwise reply with the next '
        "step as one JSON object."
    )


def system_prompt(tools: Sequence[tuple[str, str, str]], grounded: bool = False, files: bool = False) -> str:
    """The ReAct agent's system prompt: grounded (answers quote a checked line), the plain
    agent's for files in general (`files`, patch files_prompt), or the one runs recorded
    before that patch were asked with."""
    names = [name for name, _, _ in tools]
    if files and not grounded:
        own = [n for n in names if n not in FILE_TOOLS]
        return render_system_prompt(
            INTRO, tools, first=names[0] if names else ANSWER,
            tool_rules={**({own[0]: (own_tool_rule(own),)} if own else {}), **FILES_TOOL_RULES},
            rules=FILES_RULES,
            example=worked_example(EXAMPLE_GOAL, EXAMPLE_STEPS) if {"search_files", "read_file"} <= set(names) else "",
        )
    with_example = {"search_files", "read_file"} <= set(names)
    steps = EXAMPLE_STEPS
    if grounded:  # without find_definition: the read, then the grounded answer
        steps = GROUNDED_EXAMPLE_STEPS if "find_definition" in names else [*EXAMPLE_STEPS[:2], GROUNDED_EXAMPLE_STEPS[2]]
    return render_system_prompt(
        INTRO,
        tools,
        first=names[0] if names else ANSWER,
        tool_rules=GROUNDED_TOOL_RULES if grounded else TOOL_RULES,
        rules=GROUNDED_RULES if grounded else RULES,
        example=worked_example(EXAMPLE_GOAL, steps) if with_example else "",
        answer_args=GROUNDED_ANSWER_ARGS if grounded else None,
    )


def iteration_note(iteration: int, max_iterations: int) -> str:
    """The line closing the prompt: which step this is and, near the end, 'answer now'."""
    if iteration >= max_iterations:
        return (
            f"Step {iteration} of {max_iterations}: this is your LAST step. You must answer now: "
            'reply with action "answer" and give your best answer from what you have found, '
            "naming the file and the class, function or variable."
        )
    if iteration == max_iterations - 1:
        return (
            f"Step {iteration} of {max_iterations}: only one step is left after this one. "
            "Answer now if you can."
        )
    if iteration == 1:
        return f"Step 1 of {max_iterations}. Reply with the next step as one JSON object."
    return (
        f"Step {iteration} of {max_iterations}. Does an observation above already show the "
        "answer to the goal (a file name, a class, a function, a line)? Then reply with "
        'action "answer" now. Otherwise reply with the next step as one JSON object.'
    )


ANSWER_FIRST_NOTE = (
    "Step 1 of {max}. Answer now from the definition above: give source (path:LINE) and quote "
    "the line of it that states the answer, copied exactly. If none of its lines states it, "
    'answer "Not found in the code" and you will search next.'
)


def found_nothing(observation: str) -> bool:
    """A lookup that found no definition (the agent's own such lookup is not shown)."""
    return observation.lstrip().startswith("No definition named")


def looked_up_note(step: HistoryItem, goal: str = "") -> str:
    """The agent's own definition lookup, as it shows it to the model, with the lines of it
    that share the most words with the question."""
    name = next(iter(step.args.values()), "") if step.args else ""
    pointers = pointer_lines(goal.strip().split("\n\n", 1)[0], step.observation) if goal else []
    close = "If a line above states the answer, answer now and quote that line."
    if pointers:
        close = "Lines above that share words with the goal:\n" + "\n".join(pointers) + "\n" + close
    said = (
        f"Read for you, {name} from line {step.args.get('start_line', 1)}"
        if step.action == "read_file"
        else f"Looked up for you, the definition of {name}"
    )
    return f"{said}:\n{step.observation.strip()}\n\n{close}"


def _condensed(number: int, step: HistoryItem) -> str:
    if step.auto:  # not the model's own step: no "your thought"
        return summarize_step(number, step.model_copy(update={"thought": ""})) + " (looked up for you)"
    return summarize_step(number, step)


# Condensed lines kept in a prompt: the baton stays a fixed size, so a long run neither
# overflows the model's context nor records ever-longer requests.
MAX_CONDENSED = 20


def build_messages(
    goal: str,
    tools: Sequence[tuple[str, str, str]],
    history: Sequence[HistoryItem],
    iteration: int,
    max_iterations: int,
    *,
    keep_last: int = 2,
    notes: str = "",
    force_answer: bool = False,
    earlier_steps: int = 0,
    system: str | None = None,
    note: Callable[[int, int], str] | None = None,
    grounded: bool = False,
    answer_first: bool = False,
    files: bool = False,
) -> list[dict[str, str]]:
    """OpenAI chat messages asking for step `iteration` (1-based) of at most `max_iterations`.

    `tools` holds (name, signature, description). The last `keep_last` steps of `history`
    appear verbatim as assistant/user turns; older steps are condensed to one line each in
    the goal message. `notes` is extra text for the goal message (e.g. a folder listing).
    `force_answer` closes with the last step's "answer now" instruction whatever the step.
    At most `MAX_CONDENSED` condensed lines are shown, so a prompt stays bounded however
    long the run; `earlier_steps` counts steps before `history` that the caller dropped.
    `system` replaces the system prompt and `note` the closing line (`iteration_note`), for an
    agent with other tools. `grounded` asks for answers that quote their line; `files` is the
    plain agent's prompt for files in general (patch files_prompt). `answer_first`
    (the step after the agent's opening lookup) asks for the answer from the definition shown.
    """
    keep_last = max(0, keep_last)
    split = max(0, len(history) - keep_last)
    older, recent = history[:split], history[split:]
    hidden = earlier_steps + max(0, len(older) - MAX_CONDENSED)
    shown = older[max(0, len(older) - MAX_CONDENSED) :]

    opening = [f"Goal: {goal.strip()}"]
    if notes.strip():
        opening.append(notes.strip())
    if shown:
        lines = [f"({hidden} earlier steps not shown)"] if hidden else []
        lines += [_condensed(hidden + i, step) for i, step in enumerate(shown, 1)]
        opening.append("Done so far (older steps, condensed):\n" + "\n".join(lines))
    turns: list[tuple[str, str]] = [("user", "\n\n".join(opening))]

    for step in recent:
        if step.auto:  # the agent's own lookup: its note, not a step the model took
            if not found_nothing(step.observation):
                turns.append(("user", looked_up_note(step, goal)))
            continue
        if step.action:
            turns.append(("assistant", step_json(step.thought, step.action, step.args)))
        turns.append(("user", f"Observation:\n{step.observation.strip() or '(nothing)'}"))

    last_role, last_text = turns[-1]
    closing = (note or (files_note if files and not grounded else iteration_note))(
        max_iterations if force_answer else iteration, max_iterations
    )
    if answer_first:
        closing = ANSWER_FIRST_NOTE.format(max=max_iterations)
    turns[-1] = (last_role, f"{last_text}\n\n{closing}")

    messages = [{"role": "system", "content": system if system is not None else system_prompt(tools, grounded, files)}]
    for role, text in turns:
        if messages[-1]["role"] == role:  # an unusable reply leaves two user turns in a row
            messages[-1]["content"] += "\n\n" + text
        else:
            messages.append({"role": role, "content": text})
    return messages
