"""Seed 003's Orchestrator: the ReAct agent (Thought → Action → Observation, at most 10
iterations, the answer wrapped in `<answer>` tags) with the five repository tools.

It is `ReactAgent` with its own prompt and its own way of reading tool arguments; the loop,
the events, budgets, repeats and replay are the ReAct agent's. The prompt is written for
the small local model like the ReAct agent's: the tools, the JSON step, a few rules and
one worked example whose observations are exactly what the tools print (a test checks it).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from actors.agent.parsing import parse_step
from actors.agent.prompts import (
    ANSWER,
    GROUNDED_ANSWER_ARGS,
    GROUNDED_RULES_COMMON,
    AgentStep,
    StepProblem,
    build_messages,
    iteration_note,
    render_system_prompt,
    worked_example,
)
from actors.agent.react import AgentState, ReactAgent, must_answer
from actors.runtime.registry import Registry

TOOLS = (
    "list_available_repositories",
    "get_repo_documentation",
    "search_keyword",
    "find_definition",
    "read_code",
    "semantic_file_search",
)
# The argument a bare string stands for, per tool; list_available_repositories takes none.
PRIMARY_ARGS = {
    "get_repo_documentation": "repo",
    "search_keyword": "keyword",
    "read_code": "path",
    "semantic_file_search": "query",
    "find_definition": "name",
    ANSWER: "answer",
}
ARGLESS = frozenset({"list_available_repositories"})
# Results that show code or documentation: an answer before any of them is a guess.
EVIDENCE = frozenset({"get_repo_documentation", "search_keyword", "read_code", "semantic_file_search", "find_definition"})
NO_EVIDENCE = (
    "You have not looked at any code yet, so that answer would be a guess. Search first: "
    "search_keyword with one word from the goal, then read_code around a line it shows."
)

# -- the worked example (its observations are what the tools print: tested) -----------------

EXAMPLE_FILES: dict[str, str] = {
    "shop/README.md": "# shop\nA tiny web shop: carts, orders and billing.\n",
    "shop/shop/billing.py": (
        '"""Prices and discounts."""\n\n'
        "TAX_RATE = 0.2\n\n\n"
        "def apply_discount(total, code):\n"
        '    """The total after a discount code: SAVE10 takes 10% off."""\n'
        '    if code == "SAVE10":\n'
        "        return round(total * 0.9, 2)\n"
        "    return total\n"
    ),
    "shop/shop/cart.py": (
        "from shop.billing import apply_discount\n\n\n"
        "def checkout(cart, code=None):\n"
        "    total = sum(item.price for item in cart)\n"
        "    return apply_discount(total, code)\n"
    ),
}
EXAMPLE_GOAL = "How is a discount code applied at checkout in the shop repository?"
EXAMPLE_LIST_OBSERVATION = (
    "1 repository: shop\n"
    "Next: get_repo_documentation(repo) for one of them, or search_keyword(keyword) to find code."
)
EXAMPLE_SEARCH = {"keyword": "discount"}
EXAMPLE_SEARCH_OBSERVATION = """2 files contain 'discount' (case-insensitive), most occurrences first:
shop/shop/billing.py: 3 (line 6: def apply_discount(total, code):)
shop/shop/cart.py: 2 (line 1: from shop.billing import apply_discount)
Next: read_code(path, start_line) around a line shown, or answer if a line shows the answer."""
EXAMPLE_READ = {"path": "shop/shop/billing.py", "start_line": 6, "end_line": 10}
EXAMPLE_READ_OBSERVATION = """shop/shop/billing.py, lines 6-10 of 10:
 6: def apply_discount(total, code):
 7:     \"\"\"The total after a discount code: SAVE10 takes 10% off.\"\"\"
 8:     if code == "SAVE10":
 9:         return round(total * 0.9, 2)
10:     return total
(end of file: 10 lines)"""
EXAMPLE_ANSWER = (
    "checkout() in shop/shop/cart.py sums the prices and calls apply_discount "
    "(shop/shop/billing.py lines 6-10), which takes 10% off for the code SAVE10 and "
    "otherwise returns the total unchanged."
)
EXAMPLE_FIND = {"name": "apply_discount"}
EXAMPLE_FIND_OBSERVATION = """function apply_discount is defined in shop/shop/billing.py line 6.
shop/shop/billing.py, lines 6-10 of 10:
 6: def apply_discount(total, code):
 7:     \"\"\"The total after a discount code: SAVE10 takes 10% off.\"\"\"
 8:     if code == "SAVE10":
 9:         return round(total * 0.9, 2)
10:     return total"""
EXAMPLE_STEPS: list[tuple[str, str, dict[str, Any], str]] = [
    ("See which repositories there are.", "list_available_repositories", {}, EXAMPLE_LIST_OBSERVATION),
    ("Search the key word of the question.", "search_keyword", EXAMPLE_SEARCH, EXAMPLE_SEARCH_OBSERVATION),
    ("billing.py line 6 defines apply_discount; read it.", "read_code", EXAMPLE_READ, EXAMPLE_READ_OBSERVATION),
    ("Lines 6-10 show it.", ANSWER, {"answer": EXAMPLE_ANSWER}, ""),
]
GROUNDED_EXAMPLE_STEPS: list[tuple[str, str, dict[str, Any], str]] = [
    *EXAMPLE_STEPS[:2],
    ("billing.py line 6 defines apply_discount; show its definition.", "find_definition", EXAMPLE_FIND, EXAMPLE_FIND_OBSERVATION),
    (
        "Line 9 shows it.",
        ANSWER,
        {"answer": EXAMPLE_ANSWER, "source": "shop/shop/billing.py:9", "quote": "return round(total * 0.9, 2)"},
        "",
    ),
]


# -- the prompt (the ReAct agent's shape, seed 003's words) -----------------------------------

INTRO = (
    "You answer questions about the code in a folder of repositories. You work in steps: each "
    "step you call one tool and then see its result (the Observation), until you can answer."
)
TOOL_RULES: dict[str, tuple[str, ...]] = {
    "list_available_repositories": (
        "Start with list_available_repositories. Paths start with the repository name "
        "(e.g. shop/shop/billing.py).",
    ),
    "search_keyword": (
        "Find code with search_keyword: ONE short word or identifier from the question "
        '(e.g. "auth" or "SQLiteRecorder"), not the whole question.',
    ),
    "semantic_file_search": ("If keywords find nothing useful, semantic_file_search with the question in words.",),
    "read_code": ("Then read_code the best file, with start_line and end_line around the lines a result points to.",),
    "get_repo_documentation": ("get_repo_documentation shows a repository's README and file tree, for an overview.",),
}
RULES = (
    "Never repeat a step you already did.",
    "Answer as soon as you can. In the answer, name the files and line ranges you relied on "
    "(e.g. shop/shop/billing.py lines 6-10) and the exact class or function names.",
)


GROUNDED_TOOL_RULES: dict[str, tuple[str, ...]] = {
    **TOOL_RULES,
    "find_definition": (
        "When you know a name (a class, function, constant, or Class.attribute), find_definition(name) "
        "shows its definition; read that, not the search line.",
    ),
}
GROUNDED_RULES = (RULES[0], *GROUNDED_RULES_COMMON)


def system_prompt(tools: Sequence[tuple[str, str, str]], grounded: bool = False) -> str:
    names = [name for name, _, _ in tools]
    with_example = {"list_available_repositories", "search_keyword", "read_code"} <= set(names)
    steps = EXAMPLE_STEPS
    if grounded:
        steps = GROUNDED_EXAMPLE_STEPS if "find_definition" in names else [*EXAMPLE_STEPS[:3], GROUNDED_EXAMPLE_STEPS[3]]
    return render_system_prompt(
        INTRO,
        tools,
        first="search_keyword" if "search_keyword" in names else (names[0] if names else ANSWER),
        tool_rules=GROUNDED_TOOL_RULES if grounded else TOOL_RULES,
        rules=GROUNDED_RULES if grounded else RULES,
        example=worked_example(EXAMPLE_GOAL, steps) if with_example else "",
        primary_args=PRIMARY_ARGS,
        answer_args=GROUNDED_ANSWER_ARGS if grounded else None,
    )


def step_note(iteration: int, max_iterations: int) -> str:
    """The prompt's closing line: the ReAct agent's, except in the middle steps, where a small
    model reads "answer if you can" as "answer now": ask for an answer from code it has seen."""
    if iteration == 1 or iteration >= max_iterations - 1:
        return iteration_note(iteration, max_iterations)
    return (
        f"Step {iteration} of {max_iterations}. If an observation above shows the code that answers "
        'the goal, reply with action "answer" now, naming the file and the lines. Otherwise reply '
        "with the next step as one JSON object."
    )


@Registry.register_agent("orchestrator")
class Orchestrator(ReactAgent):
    """The ReAct loop with seed 003's prompt and tools."""

    name = "orchestrator"
    default_tools = TOOLS
    grounded_by_default = True  # a code question's answer quotes its line (`chorus ask`)

    def prompt(self, goal: str, tools: Any, history: Any, grounded: bool = False, **options: Any) -> list[dict[str, str]]:
        return build_messages(goal, tools, history, system=system_prompt(tools, grounded), note=step_note, **options)

    def parse(self, parsed: Any, content: str, tool_names: list[str], argless: Collection[str] = ()) -> AgentStep | StepProblem:
        return parse_step(parsed, content, tool_names, primary_args=PRIMARY_ARGS, argless=ARGLESS | set(argless))

    def refuse_answer(self, state: AgentState) -> str | None:
        """No answer before the run has seen code or documentation, unless it must answer now
        (its last step, or stuck)."""
        if must_answer(state) or state.steps_dropped:
            return None
        seen = any(h.action in EVIDENCE and not h.observation.startswith("Error") for h in state.history)
        return None if seen else NO_EVIDENCE
