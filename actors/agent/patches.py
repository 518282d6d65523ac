"""Named patches: behaviour changes of the grounded agent that recorded runs must not see.

A run records the patches it started with (`AgentStarted.patches`); the code asks
`patched(state, NAME)` where a change parts the old path from the new, so a new run takes the
new path and a recorded run replays on the one it ran (Temporal's `patched`). New grounded
runs with the agent's own lookups start with every grounded patch (`GROUNDED_PATCHES`) and the
lookups' own (`LOOKUP_PATCHES`), other grounded runs with none of those, and runs that are not
grounded with the plain agent's (`PLAIN_PATCHES`); every new run also takes the loop's own
(`LOOP_PATCHES`).
A patch is deleted, with its old path, once no fixture or supported log needs the old path
(docs/decisions/0014-named-patches.md).

The patches (the grounded rule revisions 1 to 5 that came before them map onto them, so a log
recorded at any of those revisions replays: `RULE_REVISIONS` in actors/agent/events.py, the
one table of revision numbers):

- answer_first: after an opening lookup that found the definition the question names, the
  model's first step may only be the answer ("not found" there sends it on searching).
- quote_checks: a quote cited in the wrong file is grounded in the one that holds it; a value
  is quoted from code, not a docstring or a comment; an override is quoted by the overriding
  `def` line (a line of the override the answer names will do); a value quoted from the wrong
  line of the named definition is taken from its best line; a quoted string must be the one
  the line holds.
- all_names_shown: the answer comes first only when the definition shown holds every code name
  the question gives.
- only_where: an answer saying only where a name is defined answers only a "where" question.
- head_phrase: what a "which/what X ..." question asks for is decided by its head phrase X.
- new_name: the answer to "which method/function/class ..." names one the question does not
  give, and that name is on its quote.
- private_names: a name with a leading underscore (`_LAST_GLIBC_MINOR`) is one of the
  question's names.
- kind_words: "which module-level function" (up to two words between) asks for a name.
- names_one: an answer to "which method/function/class ..." names one.
- restated: an answer giving nothing the question did not (no name, value or string of its
  own) restates the question and is refused, except for a question asking where.

The agent's own lookups' (grounded runs that read the definitions the question names):

- definition_checks: an answer is held to the definition the agent looked up. A quote of
  find_definition's header counts as the definition's first line, and a quote running on past a
  shown `def`/`class` line is grounded at it; a value asked of the named definition is quoted
  from within it (else the agent reads it), and may be quoted through a name (the line setting
  it holds the value); an override is not the named method's own line, and the answer names
  the class whose override it quotes; a base asked past the named class is not that class's
  line; a class may be answered by a one-word capitalised name; a message is not quoted from a
  docstring; a value answer gives a value its quote holds, 800 being the 800.0 a line sets.
  Before it was a patch these checks ran exactly when the run had lookups
  (`AgentStarted.lookups`), so a run recorded with lookups is given it (`lookup_patched`, the
  upcasters of AgentStarted v3 and ResearchRequested v3), and every run with lookups has it (a
  new one asking for lookups without it too), so a snapshot of the agent's state from before,
  and a research run's recorded options, are read with it.

The plain agent's (not grounded):

- files_prompt: its prompt is for questions about files in general: a file the goal names is
  read, not searched for; a tool that does what the goal asks is called, not imitated; the
  answer says what the files show (actors/agent/prompts.py `FILES_TOOL_RULES`).
- named_file_search: a goal naming a file and asking about something in it ("what does
  README.md say about replay?") starts with that file's lines holding the goal's other words
  (`search_files(query, path)`), not with its first fifty lines, which the model then left to
  search every file for the words (`opening_read`).

Every new run's (the loop's own):

- argless_tools: a tool that takes no arguments (its signature is `name()`) is called with
  empty args (`{"action": "current_time", "args": {}}`); before, that step was refused as
  "needs its arguments", so such a tool could never run.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

# In the order they came (a run records its patches in this order).
GROUNDED_PATCHES: tuple[str, ...] = (
    "answer_first",
    "quote_checks",
    "all_names_shown",
    "only_where",
    "head_phrase",
    "new_name",
    "private_names",
    "kind_words",
    "names_one",
    "restated",
)
DEFINITION_CHECKS = "definition_checks"
LOOKUP_PATCHES: tuple[str, ...] = (DEFINITION_CHECKS,)  # grounded runs with the agent's own lookups
NAMED_FILE_SEARCH = "named_file_search"
PLAIN_PATCHES: tuple[str, ...] = ("files_prompt", NAMED_FILE_SEARCH)
LOOP_PATCHES: tuple[str, ...] = ("argless_tools",)  # every new run's, grounded or not
PATCHES: tuple[str, ...] = (*GROUNDED_PATCHES, *LOOKUP_PATCHES, *PLAIN_PATCHES, *LOOP_PATCHES)
KNOWN = frozenset(PATCHES)


def lookup_patched(patches: Iterable[str], lookups: bool) -> list[str]:
    """The patches of a run recorded before `definition_checks` was a patch: with lookups, its
    checks ran (they were then the `lookups` flag's), so it has the patch, in `PATCHES`' order
    (names no code knows, `rule_revision_6`, kept last). Idempotent; without lookups, unchanged."""
    patches = list(patches)
    if not lookups or DEFINITION_CHECKS in patches:
        return patches
    return [*(p for p in PATCHES if p in patches or p == DEFINITION_CHECKS), *(p for p in patches if p not in KNOWN)]


def patched(subject: Any, name: str) -> bool:
    """Whether a run (its state, or its patch list) started with patch `name`. Asking for a
    patch no code defines is a bug here, not a run's old path: KeyError."""
    if name not in KNOWN:
        raise KeyError(f"no patch named {name!r}")
    patches: Collection[str] = subject if isinstance(subject, Collection) and not isinstance(subject, str) else subject.patches
    return name in patches


class UnknownPatch(ValueError):
    """A run asked for, or was recorded with, a patch this code does not have."""


def check_patches(names: Iterable[str]) -> list[str]:
    """The names, each once, in `PATCHES`' order; UnknownPatch naming the first unknown one
    (a run recorded at a deleted rule revision says so)."""
    names = list(names)
    for name in names:
        if name in KNOWN:
            continue
        if name.startswith("rule_revision_"):
            raise UnknownPatch(
                f"this run was recorded at grounded rule revision {name.rpartition('_')[2]}, an experiment "
                "no longer supported (revisions 6 to 8 were deleted): it can be read, not replayed or resumed"
            )
        raise UnknownPatch(f"unknown patch {name!r}: the agent's patches are {', '.join(PATCHES)}")
    return [p for p in PATCHES if p in names]
