"""The mismatch checks of the verify step (pure): does a grounded quote answer what the question asks?

`mismatch` compares what the question asks for (a value, a message, a base class, a name:
actors/agent/asks.py) with what the quote holds, by the checks `CHECKS` lists for that ask:
small pure functions of one `Case`, in order, the first that finds something wrong deciding.
A question asking for a value whose quote holds only a name, an answer whose number is not in
its quote, or an answer that only restates its question sends the agent back to read the
definition. A check that came with a patch runs only for runs with it (AgentStarted.patches,
actors/agent/patches.py), so a run replays from its log with the verdicts it had.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

from actors.agent.answer_terms import (
    HOPS,
    LITERAL,
    NUMBER,
    STRING,
    WHERE,
    about,
    code_names,
    name_hint,
    new_tokens,
    quoted_values,
    without_citations,
)
from actors.agent.asks import (
    ASKED_KIND,
    ASKED_KIND_WORDS,
    CAMEL_NAME,
    SENTENCE_WORDS,
    ask_of,
)
from actors.agent.evidence import short
from actors.agent.patches import DEFINITION_CHECKS, patched

_BASES = re.compile(r"\bclass\s+\w+\s*\((?P<bases>[^)]*)\)?")
_IDENT = re.compile(r"[A-Za-z_]\w{2,}")


@dataclass(frozen=True)
class Case:
    """One answer to judge: the question, the answer, the line it quotes, and what the run knows
    (the class lines shown, its patches), with what the question asks for (`ask_of`)."""

    question: str
    answer: str
    quote: str
    classes: Mapping[str, tuple[str, ...]]
    patches: Collection[str]
    ask: str

    @classmethod
    def of(
        cls, question: str, answer: str, quote: str, classes: Mapping[str, tuple[str, ...]] | None = None, *,
        patches: Collection[str] = (),
    ) -> Case:
        return cls(question, answer, quote, classes or {}, patches, ask_of(question, patches))

    @property
    def definition_checks(self) -> bool:
        """Whether the run has patch definition_checks (the checks that came with its lookups)."""
        return patched(self.patches, DEFINITION_CHECKS)

    @property
    def read_it(self) -> str:
        """Where to read next, for a note: the definition of a name the quote or answer gives."""
        name = name_hint(self.quote) or name_hint(self.answer)
        return f"find_definition(name='{name}')" if name else "find_definition of the name you found"


Check = Callable[[Case], str | None]  # why the quote does not answer the question, or None


# -- a base class ------------------------------------------------------------------------------------


def _quoted_bases(quote: str) -> str:
    m = _BASES.search(quote)
    return m["bases"] if m else ""


def base_class_line(c: Case) -> str | None:
    """The quote is a `class Name(Base):` line."""
    if _quoted_bases(c.quote).strip():
        return None
    return (
        "The question asks about a base class, and your quote holds no `class Name(Base):` line. "
        f"Call {c.read_it} and quote its class line."
    )


def base_of_the_asked_class(c: Case) -> str | None:
    """The quoted class line is the class the question names (or, asked past it, a base of it)."""
    quoted = re.search(r"\bclass\s+(\w+)", c.quote)
    if quoted is None or about(quoted.group(1), c.question, c.classes):
        return None
    asked = ", ".join(CAMEL_NAME.findall(c.question)) or "the class the question names"
    return (
        f"Your quote is the class line of {quoted.group(1)}, but the question asks about {asked}. "
        "Quote the class line of the class the question asks about."
    )


def base_past_the_named_class(c: Case) -> str | None:
    """(definition_checks) A question asking past the class it names is not answered by that class's own line."""
    quoted = re.search(r"\bclass\s+(\w+)", c.quote)
    named = set(re.findall(r"\b[A-Z]\w+", c.question))
    if not (quoted and quoted.group(1) in named and HOPS.search(c.question)):
        return None
    base = ", ".join(b.split(".")[-1] for b in _IDENT.findall(_quoted_bases(c.quote)) if b not in ("Generic", "ABC"))
    return (
        f"The question asks past {quoted.group(1)}'s own base class, and your quote is {quoted.group(1)}'s "
        f"class line. Call find_definition(name='{base.split(', ')[0] if base else quoted.group(1)}') and quote "
        "that class's line."
    )


def bases_named(c: Case) -> str | None:
    """The answer names a base the quoted class line gives (after `base_class_line`)."""
    bases = _quoted_bases(c.quote)
    if any(b in c.answer for b in set(_IDENT.findall(bases))):
        return None
    return f"Your quote says the bases are ({bases.strip()}), but your answer names none of them. Answer from the quote."


# -- a name ------------------------------------------------------------------------------------------


def _answer_names(c: Case) -> list[str]:
    """The code names the answer gives; (definition_checks) for a class or exception, a capitalised word too."""
    named = code_names(c.answer)
    if c.definition_checks and not named and re.search(r"\b(class|exception)\b", c.question, re.IGNORECASE):
        # a one-word class name (`Projection`): capitalised words, sentence words aside
        named = [w for w in re.findall(r"\b[A-Z][a-z0-9]\w*", without_citations(c.answer)) if w not in SENTENCE_WORDS]
    return named


def _new_names(c: Case) -> list[str]:
    """The answer's names the question does not give (every word of it, dotted names' parts included)."""
    given = set(re.findall(r"\w+", c.question))
    return [n for n in _answer_names(c) if n.split(".")[-1] not in given]


def gives_a_new_name(c: Case) -> str | None:
    """(new_name) The answer to "which method/function/class" names one the question does not give."""
    named = _answer_names(c)
    if not named or _new_names(c):
        return None
    kind = m.group(2) if (m := ASKED_KIND.search(c.question)) else "name"
    return (
        f"The question asks which {kind}, and your answer names only what the question gives "
        f"({', '.join(f'`{n}`' for n in named[:3])}). Name the {kind} and quote its `def` or `class` line."
    )


def names_one(c: Case) -> str | None:
    """(names_one) An answer to "which method/function/class ..." names one."""
    if _answer_names(c):
        return None
    kind = m.group(2) if (m := ASKED_KIND_WORDS.search(c.question)) else "name"
    return (
        f"The question asks which {kind}, and your answer names none. Name the {kind} as the code "
        "spells it and quote its `def` or `class` line, or the line that uses it."
    )


def _shown_by_quote(named: list[str], quote: str) -> str | None:
    if not named or any(re.search(rf"(?<![\w.]){re.escape(n.split('.')[-1])}(?!\w)", quote) for n in named):
        return None
    return (
        f"Your answer names {', '.join(f'`{n}`' for n in named[:3])}, and your quote does not show "
        f"{'it' if len(named) == 1 else 'any of them'}. Quote the line that defines what you name "
        "(its def or class line), e.g. from find_definition."
    )


def new_name_on_quote(c: Case) -> str | None:
    """(new_name) The name the question does not give, not one it gave, is on the quote."""
    return _shown_by_quote(_new_names(c), c.quote)


def name_on_quote(c: Case) -> str | None:
    """A name the answer gives is on the quote (implied by `new_name_on_quote` where it ran)."""
    return _shown_by_quote(_answer_names(c), c.quote)


# -- an override, a message ----------------------------------------------------------------------------


def override_line(c: Case) -> str | None:
    """A question asking which class overrides a method quotes a `def` or `class` line."""
    if re.search(r"\b(def|class)\s+\w+", c.quote):
        return None
    return (
        "The question asks which class overrides a method, and your quote is not a `def` or `class` "
        f"line. Call {c.read_it} (it lists where a method is overridden) and quote the overriding `def` line."
    )


def message_not_a_docstring(c: Case) -> str | None:
    """(definition_checks) A message is quoted from the line raising or building it, not a docstring."""
    if not (re.match(r"\s*[rbuf]?(\"\"\"|\'\'\')", c.quote)):
        return None
    return (
        "The question asks for a message's text, and your quote is a docstring, which describes the code. "
        "Quote the line that raises or builds the message (its `raise` or the string it is built from)."
    )


def message_string(c: Case) -> str | None:
    """The quote of a message holds a string."""
    if STRING.search(c.quote):
        return None
    return (
        "The question asks for a message's text, and your quote holds no string. Read the "
        "line that raises or builds the message and quote it."
    )


def message_given(c: Case) -> str | None:
    """The answer gives a word of the quoted message."""
    strings = [s["s"] for s in STRING.finditer(c.quote)]
    words = {w.lower() for s in strings for w in re.findall(r"[A-Za-z]{4,}", s)}
    if not words or any(w in c.answer.lower() for w in words):
        return None
    return f'Your quote holds the message "{short(max(strings, key=len))}" but your answer does not give it. Answer with that text.'


# -- a value -----------------------------------------------------------------------------------------


def value_quoted(c: Case) -> str | None:
    """The quote of a value holds one: a number, a string, True/False/None."""
    if LITERAL.search(c.quote):
        return None
    return (
        f"The question asks for a value, and your quote `{short(c.quote)}` holds none (no number, "
        f"string or True/False/None). Call {c.read_it} or read the line that sets the value, and quote that line."
    )


def numbers_quoted(c: Case) -> str | None:
    """A number the answer says is on the quote, unless it says one the quote holds too
    ((definition_checks) 800 is the 800.0 a line sets)."""
    said = set(NUMBER.findall(without_citations(c.answer).replace(c.quote, " ")))
    quoted = set(NUMBER.findall(c.quote))
    if c.definition_checks:
        quoted |= {n.split(".")[0] for n in quoted if re.fullmatch(r"-?\d+\.0+", n)}
    missing = sorted(n for n in said - quoted if n.lstrip("-") not in quoted)
    if not missing or quoted & said:
        return None
    return (
        f"Your answer says {', '.join(missing)}, but the quoted line does not: `{short(c.quote)}`. "
        "Give the value the quote shows, or quote the line that shows yours."
    )


def value_given(c: Case) -> str | None:
    """(definition_checks) The answer gives a value its quote holds."""
    values = quoted_values(c.quote)
    bare = without_citations(c.answer).lower()
    if not values or any(v.lower() in bare for v in values):
        return None
    return (
        f"The question asks for a value, and your answer does not give the one your quote shows "
        f"({', '.join(sorted(values)[:3])} in `{short(c.quote)}`). Answer with the value, or quote the line "
        "that sets the value the question asks for."
    )


# -- anything else -----------------------------------------------------------------------------------


def not_restated(c: Case) -> str | None:
    """(restated) An answer gives a name, value or string of its own; it may only restate a
    question asking where."""
    if WHERE.match(c.question) or new_tokens(c.question, c.answer):
        return None
    return (
        "Your answer gives no name, value or string that the question does not already give: it "
        "restates the question. Answer with what the quoted line shows (the name, value or text asked for)."
    )


# What each kind of question checks, in order: (the patch a check belongs to, or None for
# every run; the check). The first check that finds something wrong decides; a run without a
# check's patch skips it, so a recorded run is judged as it was.
CHECKS: Mapping[str, tuple[tuple[str | None, Check], ...]] = {
    "base": ((None, base_class_line), (None, base_of_the_asked_class), (DEFINITION_CHECKS, base_past_the_named_class), (None, bases_named)),
    "name": (
        ("new_name", gives_a_new_name),
        ("names_one", names_one),
        ("new_name", new_name_on_quote),
        (None, name_on_quote),
    ),
    "override": ((None, override_line),),
    "message": ((DEFINITION_CHECKS, message_not_a_docstring), (None, message_string), (None, message_given)),
    "value": ((None, value_quoted), (None, numbers_quoted), (DEFINITION_CHECKS, value_given)),
    "any": (("restated", not_restated),),
}


def mismatch(
    question: str, answer: str, quote: str, classes: Mapping[str, tuple[str, ...]] | None = None, *,
    patches: Collection[str] = (),
) -> str | None:
    """Why the quote does not answer what the question asks (for the model), or None: the first
    of `CHECKS[ask]` (the run's patches' ones) that says so.
    `classes` (class → bases, from the class lines the tools showed) lets a two-hop question
    quote the class line of a base of the class it names."""
    case = Case.of(question, answer, quote, classes, patches=patches)
    for patch, check in CHECKS.get(case.ask, ()):
        if (patch is None or patched(patches, patch)) and (why := check(case)) is not None:
            return why
    return None
