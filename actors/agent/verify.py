"""The verify step (pure: the question, the answer and what the tools showed in, a verdict out).

`check_answer` is the whole check of an answer. Its quote is first grounded (actors/agent/evidence.py):
a line the tools showed, at that line. Then `mismatch` (actors/agent/mismatch.py) compares what
the question asks for with what the quote holds; a value quoted through a name, or from the
wrong line of the definition the question names, is followed to the line that states it
(`through_names`, `through_scope`). After a refusal, `lookup_name` and `pointer_lines` say
where the agent reads next. What a patch changes runs only for runs with it
(AgentStarted.patches, actors/agent/patches.py), so a run replays with the verdicts it had.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from actors.agent.answer_terms import (
    LITERAL,
    NUMBER,
    STRING,
    quoted_values,
    terms,
    without_citations,
)
from actors.agent.asks import CAMEL_NAME, SENTENCE_WORDS, ask_of, question_name
from actors.agent.evidence import (
    NOT_FOUND,
    NUMBERED,
    Grounded,
    citation,
    class_lines,
    ground,
    header_cited,
    in_prose,
    is_not_found,
    norm,
    outside,
    override_owner,
    same_file,
    short,
    shown_lines,
    shows_overrides,
)
from actors.agent.mismatch import mismatch
from actors.agent.patches import DEFINITION_CHECKS, patched

_DOTTED_NAME = re.compile(r"\b([A-Z]\w*(?:\.[A-Za-z_]\w*)+)")
# A capitalised word after the first word ("the Repository class"), the last resort.
_CAPITALISED = re.compile(r"(?<=[\w,;(] )([A-Z][a-z]{2,}\w*)\b")



def lookup_name(question: str, answer: str, done: Iterable[str]) -> str | None:
    """The name whose definition the agent should read after a refused answer: a `Class.member`
    or a CamelCase/CONSTANT name from the question, else from the answer, not looked up yet."""
    seen = {str(d).strip().strip("`()").lower() for d in done}
    for text in (question, answer):
        for pattern in (_DOTTED_NAME, CAMEL_NAME, _CAPITALISED):
            for m in pattern.finditer(text):
                name = m.group(1).rstrip(".")
                low = name.lower()
                if low not in seen and not any(d.startswith(low + ".") for d in seen):
                    return name
    return None


# The answer says where a name is defined and nothing else ("X is defined in a.py line 45.").
_ONLY_WHERE = re.compile(
    r"^\W*[\w.]+\W*\s+(?:is|are)\s+(?:defined|declared|assigned|set)\s+(?:in|at)\s+\S+?(?:,?\s+lines?\s+\d+(?:\s*-\s*\d+)?)?\W*$",
    re.IGNORECASE,
)
_ASKS_WHERE = re.compile(r"\b(where|which (file|module|package|folder)|defined|defines|declared)\b", re.IGNORECASE)


def only_where(question: str, answer: str) -> str | None:
    """Why an answer that only says where a name is defined does not answer a question that
    does not ask where (for the model), or None."""
    first = answer.strip().split("\n\n", 1)[0]  # the answer, not its evidence
    if _ASKS_WHERE.search(question) or not _ONLY_WHERE.match(first):
        return None
    return (
        "Your answer only says where a name is defined, and the question does not ask where. Answer what it asks "
        "(a value, a name, a message) from a line that states it, or answer \"" + NOT_FOUND + "\"."
    )


# Words a question uses for what code abbreviates.


def pointer_lines(question: str, observation: str, limit: int = 3) -> list[str]:
    """The numbered lines of an observation sharing the most words with the question (at least
    two), best first: what the agent points the model at in a definition it looked up."""
    asked = terms(question)
    ask = ask_of(question)
    scored = []
    for raw in observation.splitlines():
        m = NUMBERED.match(raw)
        if not m or not m["text"].strip():
            continue
        text = m["text"]
        score = len(asked & terms(text))
        if ask == "value" and LITERAL.search(text) or ask == "message" and STRING.search(text):
            score += 1
        if score >= 2:
            scored.append((-score, int(m["n"]), f"{m['n']}: {text.strip()}"))
    return [line for _, _, line in sorted(scored)[:limit]]


def shows_a_value(question: str, observation: str) -> bool:
    """Whether a definition shows a line that may state the value a question asks for: one of
    its `pointer_lines` holding a literal (a number, a string, True/False/None)."""
    return any(LITERAL.search(line.split(": ", 1)[-1]) for line in pointer_lines(question, observation))


# -- the whole check ---------------------------------------------------------------------------------


def through_names(question: str, answer: str, quote: Grounded, shown: Mapping[str, Mapping[int, str]]) -> Grounded | None:
    """A value quoted through a name (`min(x * 2, max_x)` for the maximum): the shown line of the
    same file that assigns one of the quote's names, matching the question best among those
    assignments, when it holds the value the answer gives."""
    said = set(NUMBER.findall(without_citations(answer))) | {m["s"] for m in STRING.finditer(answer)}
    names = {n for n in re.findall(r"[A-Za-z_]\w{2,}", quote.text)}
    lines = next((ls for path, ls in shown.items() if path == quote.path), {})
    asked = terms(question)
    options = []
    for n, text in lines.items():
        m = re.match(r"\s*(?:self\.)?([A-Za-z_]\w*)\s*(?::[^=]+)?=(?!=)\s*(.+)$", text)
        if m and m.group(1) in names and n != quote.line:
            options.append((len(asked & terms(m.group(1))), n, text))
    if not options:
        return None
    best = max(o[0] for o in options)
    for score, n, text in sorted(options, key=lambda o: o[1]):
        values = quoted_values(text)
        if score == best and said & values | {v.split(".")[0] for v in values if re.fullmatch(r"-?\d+\.0+", v)} & said:
            return Grounded(quote.path, n, norm(text), text.strip())
    return None


def other_string(answer: str, quote: str) -> str | None:
    """Why an answer's quoted value is not the quote's (`'events_table_tt_main'` where the line
    holds `"_tt_main"`), or None. Only values shaped like code (no spaces) count as the answer's."""
    said = {m["s"] for m in STRING.finditer(without_citations(answer)) if re.fullmatch(r"[\w.\-/:]+", m["s"])}
    if not said:
        return None
    held = {v.strip("'\"") for v in quoted_values(quote)}
    if said & held or any(s in quote for s in said if len(s) > 3 and s not in held and re.search(rf"\b{re.escape(s)}\b", quote)):
        return None
    return (
        f"Your answer gives {', '.join(sorted(said)[:3])}, and your quote holds {', '.join(sorted(held)[:3]) or 'no such value'}: "
        "give the value exactly as the quoted line states it, or quote the line that states yours."
    )


_SETS_A_VALUE = re.compile(r"""^\s*[\w.]+\s*(?::[^=]+)?=\s*(-?\d+(?:\.\d+)?|[rbuf]?(['"]).*\2|True|False|None)\s*,?\s*$""")


def through_scope(
    question: str, answer: str, scope: Iterable[tuple[str, int, int]], shown: Mapping[str, Mapping[int, str]],
    patches: Collection[str] = (),
) -> Grounded | None:
    """A value the answer gives, quoted from the wrong line: the line of the definition the
    question names (`scope`) that matches the question best among its lines of code holding a
    value, when it is the only best one and it holds the answer's value. A guess that happens
    to be on a weaker line is not taken."""
    said = set(NUMBER.findall(without_citations(answer))) | {m["s"] for m in STRING.finditer(answer)}
    if not said:
        return None
    asked = terms(question) - terms(question_name(question, patches) or "")  # what is asked of the definition, not its name
    options = []
    for path, a, b in scope:
        lines = next((ls for p, ls in shown.items() if same_file(p, path)), {})
        for n in range(a, b + 1):
            text = lines.get(n)
            if text is None or not LITERAL.search(text) or in_prose(lines, n):
                continue
            sets = 0.5 if _SETS_A_VALUE.match(text) else 0  # `name = 800.0` states a value; an expression uses one
            options.append((len(asked & terms(text)) + sets, path, n, text))
    if not options:
        return None
    best = max(o[0] for o in options)
    top = [o for o in options if o[0] == best]
    if best == 0 or len(top) != 1:
        return None
    _, path, n, text = top[0]
    values = quoted_values(text)
    values |= {v.split(".")[0] for v in values if re.fullmatch(r"-?\d+\.0+", v)}
    return Grounded(path, n, norm(text), text.strip()) if said & values else None


@dataclass(frozen=True)
class Verdict:
    answer: str | None  # the answer to give (its evidence appended), or None: refused
    observation: str = ""  # why it was refused, for the model
    read: tuple[str, int] | None = None  # (path, start_line): the definition to read next
    find: str | None = None  # a name whose definition to look up next
    follow: bool = True  # whether the agent may look up a name of the answer next (False: what to quote is in view)


@dataclass(frozen=True)
class Judging:
    """An answer on its way through the verify step: what it was asked and answered, what the
    tools showed, and what the steps so far found (its quote grounded at `checked`; `owner`, the
    class whose override it quotes; `wrong`, why the quote does not answer the question)."""

    question: str
    text: str
    observations: list[str]
    shown: Mapping[str, Mapping[int, str]]
    checked: Grounded
    ask: str
    scope: list[tuple[str, int, int]]
    patches: Collection[str]
    forced: bool
    owner: str | None = None
    wrong: str | None = None

    def refused(self, why: str) -> Verdict:
        return _refused(why, self.text, self.forced)

    def lines_of(self, path: str) -> Mapping[int, str]:
        return next((ls for p, ls in self.shown.items() if p == path), {})


Step = Callable[[Judging], "Judging | Verdict"]


def says_only_where(j: Judging) -> Judging | Verdict:
    """An answer saying only where a name is defined answers only a "where" question."""
    why = only_where(j.question, j.text)
    return j if why is None else j.refused(why)


def value_in_prose(j: Judging) -> Judging | Verdict:
    """A value is quoted from code, not a docstring or a comment."""
    if j.ask != "value" or not in_prose(j.lines_of(j.checked.path), j.checked.line):
        return j
    why = (
        f"Your quote {j.checked.path}:{j.checked.line} is from a docstring or a comment, which describes the code. "
        "Quote the line of code that sets or returns the value."
    )
    return _stay(j.refused(why))


def override_quoted(j: Judging) -> Judging | Verdict:
    """An override is quoted by the overriding `def` line, or a line of the override."""
    if j.ask != "override":
        return j
    member = (question_name(j.question, j.patches) or "").rpartition(".")[2]
    inside = override_owner(j.observations, j.checked) is not None
    if not member or inside or re.search(rf"\bdef\s+{re.escape(member)}\b", j.checked.text):
        return j
    why = (
        f"The question asks which class overrides {member}, and your quote is not a line of an override of it. "
        f"Quote the `def {member}(` line of the override (find_definition of the method shows its overrides)."
    )
    refused = j.refused(why)
    return _stay(refused) if shows_overrides(j.observations) else refused


def value_in_scope(j: Judging) -> Judging | Verdict:
    """A value asked of a named definition is read from that definition."""
    away = outside(j.checked, j.scope) if j.ask == "value" else None
    if away is None:
        return j
    path, a, b = away
    why = (
        f"The question asks about the definition in {path} lines {a}-{b}; your quote is {j.checked.path}:"
        f"{j.checked.line}, outside it (another definition's value). Read {path} from line {a} and quote "
        "the line of it that states the answer."
    )
    return j.refused(why) if j.forced else Verdict(None, why, read=(path, a))


def not_the_named_method(j: Judging) -> Judging | Verdict:
    """The named method's own line is not its override: look up the subclass's."""
    if not (j.ask == "override" and j.scope and outside(j.checked, j.scope) is None):
        return j
    member = (question_name(j.question, j.patches) or "").rpartition(".")[2]
    asked = set(re.findall(r"\b[A-Z]\w+", j.question))
    cls = next((c for c in re.findall(r"\b([A-Z]\w+)", without_citations(j.text)) if c not in asked | SENTENCE_WORDS), None)
    why = (
        f"Your quote {j.checked.path}:{j.checked.line} is the method the question names, not its override. Quote the "
        "`def` line of the overriding method in the subclass (its definition lists where it is overridden)."
    )
    if j.forced:
        return j.refused(why)
    return Verdict(None, why, find=f"{cls}.{member}" if cls and member else None)


def owner_named(j: Judging) -> Judging | Verdict:
    """A quote in a class's override is answered by that class: `owner`, kept."""
    owner = override_owner(j.observations, j.checked) if j.ask == "override" else None
    if owner and not re.search(rf"(?<![\w.]){re.escape(owner.split('.')[-1])}(?!\w)", without_citations(j.text)):
        why = (
            f"Your quote {j.checked.path}:{j.checked.line} is in {owner}'s override, and your answer does not name "
            f"{owner}. Answer with the class whose override you quote."
        )
        return _stay(j.refused(why))
    return replace(j, owner=owner)


def quote_mismatch(j: Judging) -> Judging | Verdict:
    """What the quote holds against what the question asks for (actors/agent/mismatch.py): `wrong`."""
    wrong = mismatch(j.question, j.text, j.checked.text, class_lines(j.shown), patches=j.patches)
    return replace(j, wrong=wrong)


def override_owner_line(j: Judging) -> Judging | Verdict:
    """A line of the override the answer names: its `def` line is not needed."""
    return replace(j, wrong=None) if j.owner else j


def value_through_names(j: Judging) -> Judging | Verdict:
    """A value quoted through a name: the line setting that name holds it."""
    if j.wrong is None or j.ask != "value":
        return j
    resolved = through_names(j.question, j.text, j.checked, j.shown)
    if resolved is None and patched(j.patches, "quote_checks"):  # the named definition's best line holds it
        resolved = through_scope(j.question, j.text, j.scope, j.shown, j.patches)
    return j if resolved is None else replace(j, checked=resolved, wrong=None)


def value_as_stated(j: Judging) -> Judging | Verdict:
    """A quoted value is the one the line holds."""
    if j.wrong is not None or j.ask != "value":
        return j
    return replace(j, wrong=other_string(j.text, j.checked.text))


def nothing_wrong(j: Judging) -> Judging | Verdict:
    """The answer is refused with the first reason the steps found."""
    return j if j.wrong is None else j.refused(j.wrong)


# The steps of the verify step after the quote is grounded, in order: each (patch, step) runs
# for runs with that patch (None: every run); the first to give a verdict ends the check.
STEPS: tuple[tuple[str | None, Step], ...] = (
    ("only_where", says_only_where),
    ("quote_checks", value_in_prose),
    ("quote_checks", override_quoted),
    (DEFINITION_CHECKS, value_in_scope),
    (DEFINITION_CHECKS, not_the_named_method),
    (DEFINITION_CHECKS, owner_named),
    (None, quote_mismatch),
    ("quote_checks", override_owner_line),
    (DEFINITION_CHECKS, value_through_names),
    ("quote_checks", value_as_stated),
    (None, nothing_wrong),
)


def check_answer(
    question: str, answer: str, args: Mapping[str, Any], observations: Iterable[str], *, forced: bool = False,
    scope: Iterable[tuple[str, int, int]] = (), patches: Collection[str] = (),
) -> Verdict:
    """Accept a grounded, verified answer (with its evidence line), a plain "not found", or
    refuse with a note. `forced` (the last step): a refusal becomes "not found", with the
    unchecked answer named as such. `patches` are the run's (AgentStarted.patches): what each
    changes is in actors/agent/patches.py (here quote_checks, only_where, definition_checks, and
    through `ask_of` and `mismatch` the rest). The quote is grounded first, then the `STEPS` of
    the run's patches."""
    text = answer.strip()
    if is_not_found(text):
        return Verdict(text if text.lower().startswith("not found") else f"{NOT_FOUND}. {text}")
    cite = citation(args, text)
    if cite is not None and patched(patches, DEFINITION_CHECKS):
        cite = header_cited(cite)
    if cite is None:
        why = (
            "Your answer quotes no line. Give source (path:LINE) and quote (that line, copied "
            f'exactly from an observation), or answer "{NOT_FOUND}".'
        )
        return _refused(why, text, forced)
    observations = list(observations)
    shown = shown_lines(observations)
    checked = ground(shown, cite, patches)
    if isinstance(checked, str):
        return _refused(checked, text, forced)
    judging: Judging | Verdict = Judging(
        question, text, observations, shown, checked, ask_of(question, patches), list(scope), patches, forced,
    )
    for patch, step in STEPS:
        if patch is None or patched(patches, patch):
            judging = step(judging)
            if isinstance(judging, Verdict):
                return judging
    assert isinstance(judging, Judging)
    checked = judging.checked
    evidence = f"{checked.path}:{checked.line}: {checked.text}"
    if norm(checked.text) in norm(text) and f"{checked.line}" in text:
        return Verdict(text)
    return Verdict(f"{text}\n\nEvidence: {evidence}")


def _stay(verdict: Verdict) -> Verdict:
    """A refusal after which the agent looks nothing up: what to quote is already in view."""
    return Verdict(verdict.answer, verdict.observation, follow=False)


def _refused(why: str, text: str, forced: bool) -> Verdict:
    if forced:
        return Verdict(f"{NOT_FOUND}: no line the tools showed confirms it. (Unchecked lead: {short(text, 200)})")
    return Verdict(None, why)
