"""The verify step (pure: the question, the answer and what the tools showed in, a verdict out).

`check_answer` is the whole check of an answer. Its quote is first grounded (actors/agent/evidence.py):
a line the tools showed, at that line. Then `mismatch` compares what the question asks for (a
value, a message, a base class, a name: actors/agent/asks.py) with what the quote holds, by the
checks `CHECKS` lists for that ask: small pure functions of one `Case`, in order, the first that
finds something wrong deciding. A question asking for a value whose quote holds only a name, an
answer whose number is not in its quote, or an answer that only restates its question sends the
agent back to read the definition. A check that came with a patch runs only for runs with it
(AgentStarted.patches, actors/agent/patches.py), so a run replays from its log with the verdicts
it had.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from actors.agent.asks import (
    ASKED_KIND,
    ASKED_KIND_WORDS,
    CAMEL_NAME,
    SENTENCE_WORDS,
    ask_of,
    question_name,
)
from actors.agent.evidence import (
    NOT_FOUND,
    NUMBERED,
    SOURCE,
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
from actors.agent.patches import patched
from actors.tools.search import STOP_WORDS

_LITERAL = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.])|(['\"]).+?\1|\b(True|False|None)\b")
_STRING = re.compile(r"[fbr]?(['\"])(?P<s>.+?)\1")
_NUMBER = re.compile(r"(?<![\w.:/-])-?\d+(?:\.\d+)?(?![\w])")
_BASES = re.compile(r"\bclass\s+\w+\s*\((?P<bases>[^)]*)\)?")
_IDENT = re.compile(r"[A-Za-z_]\w{2,}")


def _values(quote: str) -> set[str]:
    """The values a quoted line holds: numbers (800.0 also as 800), strings, True/False/None."""
    out: set[str] = set()
    for n in _NUMBER.findall(quote):
        out.add(n)
        if re.fullmatch(r"-?\d+\.0+", n):
            out.add(n.split(".")[0])
    out |= {m["s"] for m in _STRING.finditer(quote) if m["s"].strip()}
    out |= set(re.findall(r"\b(True|False|None)\b", quote))
    return out


def _without_citations(answer: str) -> str:
    text = SOURCE.sub(" ", answer)
    return re.sub(r"\blines? \d+(\s*-\s*\d+)?\b", " ", text, flags=re.I)


@dataclass(frozen=True)
class Case:
    """One answer to judge: the question, the answer, the line it quotes, and what the run knows
    (the class lines shown, `strict`, its patches), with what the question asks for (`ask_of`)."""

    question: str
    answer: str
    quote: str
    classes: Mapping[str, tuple[str, ...]]
    strict: bool
    patches: Collection[str]
    ask: str

    @classmethod
    def of(
        cls, question: str, answer: str, quote: str, classes: Mapping[str, tuple[str, ...]] | None = None, *,
        strict: bool = False, patches: Collection[str] = (),
    ) -> Case:
        return cls(question, answer, quote, classes or {}, strict, patches, ask_of(question, patches))

    @property
    def read_it(self) -> str:
        """Where to read next, for a note: the definition of a name the quote or answer gives."""
        name = _name_hint(self.quote) or _name_hint(self.answer)
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
    if quoted is None or _about(quoted.group(1), c.question, c.classes):
        return None
    asked = ", ".join(CAMEL_NAME.findall(c.question)) or "the class the question names"
    return (
        f"Your quote is the class line of {quoted.group(1)}, but the question asks about {asked}. "
        "Quote the class line of the class the question asks about."
    )


def base_past_the_named_class(c: Case) -> str | None:
    """(strict) A question asking past the class it names is not answered by that class's own line."""
    quoted = re.search(r"\bclass\s+(\w+)", c.quote)
    named = set(re.findall(r"\b[A-Z]\w+", c.question))
    if not (c.strict and quoted and quoted.group(1) in named and _HOPS.search(c.question)):
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
    """The code names the answer gives; (strict) for a class or exception, a capitalised word too."""
    named = _code_names(c.answer)
    if c.strict and not named and re.search(r"\b(class|exception)\b", c.question, re.I):
        # a one-word class name (`Projection`): capitalised words, sentence words aside
        named = [w for w in re.findall(r"\b[A-Z][a-z0-9]\w*", _without_citations(c.answer)) if w not in SENTENCE_WORDS]
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
    """(strict) A message is quoted from the line raising or building it, not a docstring."""
    if not (c.strict and re.match(r"\s*[rbuf]?(\"\"\"|\'\'\')", c.quote)):
        return None
    return (
        "The question asks for a message's text, and your quote is a docstring, which describes the code. "
        "Quote the line that raises or builds the message (its `raise` or the string it is built from)."
    )


def message_string(c: Case) -> str | None:
    """The quote of a message holds a string."""
    if _STRING.search(c.quote):
        return None
    return (
        "The question asks for a message's text, and your quote holds no string. Read the "
        "line that raises or builds the message and quote it."
    )


def message_given(c: Case) -> str | None:
    """The answer gives a word of the quoted message."""
    strings = [s["s"] for s in _STRING.finditer(c.quote)]
    words = {w.lower() for s in strings for w in re.findall(r"[A-Za-z]{4,}", s)}
    if not words or any(w in c.answer.lower() for w in words):
        return None
    return f'Your quote holds the message "{short(max(strings, key=len))}" but your answer does not give it. Answer with that text.'


# -- a value -----------------------------------------------------------------------------------------


def value_quoted(c: Case) -> str | None:
    """The quote of a value holds one: a number, a string, True/False/None."""
    if _LITERAL.search(c.quote):
        return None
    return (
        f"The question asks for a value, and your quote `{short(c.quote)}` holds none (no number, "
        f"string or True/False/None). Call {c.read_it} or read the line that sets the value, and quote that line."
    )


def numbers_quoted(c: Case) -> str | None:
    """A number the answer says is on the quote, unless it says one the quote holds too
    ((strict) 800 is the 800.0 a line sets)."""
    said = set(_NUMBER.findall(_without_citations(c.answer).replace(c.quote, " ")))
    quoted = set(_NUMBER.findall(c.quote))
    if c.strict:
        quoted |= {n.split(".")[0] for n in quoted if re.fullmatch(r"-?\d+\.0+", n)}
    missing = sorted(n for n in said - quoted if n.lstrip("-") not in quoted)
    if not missing or quoted & said:
        return None
    return (
        f"Your answer says {', '.join(missing)}, but the quoted line does not: `{short(c.quote)}`. "
        "Give the value the quote shows, or quote the line that shows yours."
    )


def value_given(c: Case) -> str | None:
    """(strict) The answer gives a value its quote holds."""
    values = _values(c.quote)
    bare = _without_citations(c.answer).lower()
    if not (c.strict and values) or any(v.lower() in bare for v in values):
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
    if _WHERE.match(c.question) or new_tokens(c.question, c.answer):
        return None
    return (
        "Your answer gives no name, value or string that the question does not already give: it "
        "restates the question. Answer with what the quoted line shows (the name, value or text asked for)."
    )


# What each kind of question checks, in order: (the patch a check belongs to, or None for
# every run; the check). The first check that finds something wrong decides; a run without a
# check's patch skips it, so a recorded run is judged as it was.
CHECKS: Mapping[str, tuple[tuple[str | None, Check], ...]] = {
    "base": ((None, base_class_line), (None, base_of_the_asked_class), (None, base_past_the_named_class), (None, bases_named)),
    "name": (
        ("new_name", gives_a_new_name),
        ("names_one", names_one),
        ("new_name", new_name_on_quote),
        (None, name_on_quote),
    ),
    "override": ((None, override_line),),
    "message": ((None, message_not_a_docstring), (None, message_string), (None, message_given)),
    "value": ((None, value_quoted), (None, numbers_quoted), (None, value_given)),
    "any": (("restated", not_restated),),
}


def mismatch(
    question: str, answer: str, quote: str, classes: Mapping[str, tuple[str, ...]] | None = None, *, strict: bool = False,
    patches: Collection[str] = (),
) -> str | None:
    """Why the quote does not answer what the question asks (for the model), or None: the first
    of `CHECKS[ask]` (the run's patches' ones) that says so.
    `classes` (class → bases, from the class lines the tools showed) lets a two-hop question
    quote the class line of a base of the class it names. `strict` (runs started with the
    agent's own lookups): an answer to a value question must give a value its quote holds."""
    case = Case.of(question, answer, quote, classes, strict=strict, patches=patches)
    for patch, check in CHECKS.get(case.ask, ()):
        if (patch is None or patched(patches, patch)) and (why := check(case)) is not None:
            return why
    return None


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
    re.I,
)
_ASKS_WHERE = re.compile(r"\b(where|which (file|module|package|folder)|defined|defines|declared)\b", re.I)


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
_SAME = {
    "maximum": "max", "upper": "max", "most": "max", "largest": "max", "highest": "max",
    "minimum": "min", "lower": "min", "least": "min", "smallest": "min",
    "milliseconds": "ms", "millisecond": "ms", "seconds": "secs", "characters": "len", "length": "len",
    "longer": "len", "long": "len", "number": "num", "count": "num", "default": "default",
}
_STOP = frozenset(
    "the a an of in on at to for is are was be by it its does do did what which when how who that this with from "
    "as or and not no than after before each into their there then class method function value".split()
)


def _terms(text: str) -> set[str]:
    """Words of a text or of code identifiers (split on snake_case and camelCase), normalised."""
    words = re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+", text)
    out = set()
    for w in words:
        w = w.lower()
        if w in _STOP or len(w) < 2:
            continue
        w = _SAME.get(w, w)
        out.add(w[:-1] if len(w) > 4 and w.endswith("s") else w)
    return out


def pointer_lines(question: str, observation: str, limit: int = 3) -> list[str]:
    """The numbered lines of an observation sharing the most words with the question (at least
    two), best first: what the agent points the model at in a definition it looked up."""
    asked = _terms(question)
    ask = ask_of(question)
    scored = []
    for raw in observation.splitlines():
        m = NUMBERED.match(raw)
        if not m or not m["text"].strip():
            continue
        text = m["text"]
        score = len(asked & _terms(text))
        if ask == "value" and _LITERAL.search(text):
            score += 1
        elif ask == "message" and _STRING.search(text):
            score += 1
        if score >= 2:
            scored.append((-score, int(m["n"]), f"{m['n']}: {text.strip()}"))
    return [line for _, _, line in sorted(scored)[:limit]]


def shows_a_value(question: str, observation: str) -> bool:
    """Whether a definition shows a line that may state the value a question asks for: one of
    its `pointer_lines` holding a literal (a number, a string, True/False/None)."""
    return any(_LITERAL.search(line.split(": ", 1)[-1]) for line in pointer_lines(question, observation))


# A question that asks past the named class ("its base class in turn subclasses ...").
_HOPS = re.compile(r"\b(in turn|that base|its base|base class of (its|the)|parent of|grand\w*|indirectly|transitively|ancestors?)\b", re.I)


def _about(name: str, question: str, classes: Mapping[str, tuple[str, ...]]) -> bool:
    """Whether a class is one the question names, or a base (at any depth) of one it names."""
    named = set(re.findall(r"\b[A-Z]\w+", question))
    if not named or name in named:
        return True
    if not _HOPS.search(question):  # one hop: the class line must be the named class's own
        return False
    frontier, seen = list(named), set()
    while frontier:
        cls = frontier.pop()
        if cls in seen:
            continue
        seen.add(cls)
        bases = classes.get(cls, ())
        if name in bases:
            return True
        frontier += bases
    return False


_CODE = re.compile(r"`([^`\s]+)`|\b([A-Za-z_]\w*_\w+|[a-z]+[A-Z]\w*|[A-Z][a-z0-9]+[A-Z]\w*)\b")


_WHERE = re.compile(r"\s*(where|in which (file|module)|which (file|module))\b", re.I)
# Words an answer may use to restate a question without answering it.
_RESTATING = STOP_WORDS | frozenset(
    """maps mapped map defines defined define returns returned return sets set passes passed pass
    gives given takes taken holds held contains contain stores stored keeps kept builds built makes
    made handles handled hands handed determines determined decides decided creates created
    module function method class attribute constant variable property decorator file line code
    value answer question shown shows defined definition evidence quote""".split()
)
_WORD = re.compile(r"[A-Za-z0-9_][\w.{}-]*[\w}]|[A-Za-z0-9]")


def _stem(word: str) -> str:
    w = word.lower().strip(".-_")
    for end in ("ies", "es", "s", "ed", "ing"):
        if w.endswith(end) and len(w) - len(end) >= 3:
            return w[: -len(end)]
    return w


def new_tokens(question: str, answer: str) -> list[str]:
    """The words of an answer that its question does not give (plurals and -ed/-ing forms
    count as the question's), leaving out file paths, stop words and the verbs and nouns an
    answer restating the question uses (patch restated's check)."""
    text = _without_citations(re.split(r"\bEvidence:", answer)[0])
    words = [p for w in _WORD.findall(question) for p in (w, *w.split("."))]
    asked = {_stem(w) for w in words} | {w.lower() for w in words}
    out = []
    for word in _WORD.findall(text):
        if re.fullmatch(r"[\w/.-]+\.(py|md|txt|json|toml|yaml|yml|cfg|ini)", word):
            continue
        if word.lower() in _RESTATING or word.lower() in asked or _stem(word) in asked:
            continue
        out.append(word)
    return out


def _code_names(answer: str) -> list[str]:
    """The code names an answer gives: in backticks, or shaped like code (snake_case, CamelCase)."""
    text = SOURCE.sub(" ", answer)
    names = [(a or b).strip("()") for a, b in _CODE.findall(text)]
    return [n for n in dict.fromkeys(names) if n and not re.fullmatch(r"[\w/.-]+\.(py|md|txt|json|toml|yaml|yml)", n)]


def _name_hint(text: str) -> str:
    """A class or qualified name in the text, to point the agent at its definition."""
    m = re.search(r"\b([A-Z]\w+(?:\.\w+)?)\b", text)
    return m.group(1) if m else ""


# -- the whole check ---------------------------------------------------------------------------------


def through_names(question: str, answer: str, quote: Grounded, shown: Mapping[str, Mapping[int, str]]) -> Grounded | None:
    """A value quoted through a name (`min(x * 2, max_x)` for the maximum): the shown line of the
    same file that assigns one of the quote's names, matching the question best among those
    assignments, when it holds the value the answer gives."""
    said = set(_NUMBER.findall(_without_citations(answer))) | {m["s"] for m in _STRING.finditer(answer)}
    names = {n for n in re.findall(r"[A-Za-z_]\w{2,}", quote.text)}
    lines = next((ls for path, ls in shown.items() if path == quote.path), {})
    asked = _terms(question)
    options = []
    for n, text in lines.items():
        m = re.match(r"\s*(?:self\.)?([A-Za-z_]\w*)\s*(?::[^=]+)?=(?!=)\s*(.+)$", text)
        if m and m.group(1) in names and n != quote.line:
            options.append((len(asked & _terms(m.group(1))), n, text))
    if not options:
        return None
    best = max(o[0] for o in options)
    for score, n, text in sorted(options, key=lambda o: o[1]):
        values = _values(text)
        if score == best and said & values | {v.split(".")[0] for v in values if re.fullmatch(r"-?\d+\.0+", v)} & said:
            return Grounded(quote.path, n, norm(text), text.strip())
    return None


def other_string(answer: str, quote: str) -> str | None:
    """Why an answer's quoted value is not the quote's (`'events_table_tt_main'` where the line
    holds `"_tt_main"`), or None. Only values shaped like code (no spaces) count as the answer's."""
    said = {m["s"] for m in _STRING.finditer(_without_citations(answer)) if re.fullmatch(r"[\w.\-/:]+", m["s"])}
    if not said:
        return None
    held = {v.strip("'\"") for v in _values(quote)}
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
    said = set(_NUMBER.findall(_without_citations(answer))) | {m["s"] for m in _STRING.finditer(answer)}
    if not said:
        return None
    asked = _terms(question) - _terms(question_name(question, patches) or "")  # what is asked of the definition, not its name
    options = []
    for path, a, b in scope:
        lines = next((ls for p, ls in shown.items() if same_file(p, path)), {})
        for n in range(a, b + 1):
            text = lines.get(n)
            if text is None or not _LITERAL.search(text) or in_prose(lines, n):
                continue
            sets = 0.5 if _SETS_A_VALUE.match(text) else 0  # `name = 800.0` states a value; an expression uses one
            options.append((len(asked & _terms(text)) + sets, path, n, text))
    if not options:
        return None
    best = max(o[0] for o in options)
    top = [o for o in options if o[0] == best]
    if best == 0 or len(top) != 1:
        return None
    _, path, n, text = top[0]
    values = _values(text)
    values |= {v.split(".")[0] for v in values if re.fullmatch(r"-?\d+\.0+", v)}
    return Grounded(path, n, norm(text), text.strip()) if said & values else None


@dataclass(frozen=True)
class Verdict:
    answer: str | None  # the answer to give (its evidence appended), or None: refused
    observation: str = ""  # why it was refused, for the model
    read: tuple[str, int] | None = None  # (path, start_line): the definition to read next
    find: str | None = None  # a name whose definition to look up next
    follow: bool = True  # whether the agent may look up a name of the answer next (False: what to quote is in view)


def check_answer(
    question: str, answer: str, args: Mapping[str, Any], observations: Iterable[str], *, forced: bool = False,
    strict: bool = False, scope: Iterable[tuple[str, int, int]] = (), patches: Collection[str] = (),
) -> Verdict:
    """Accept a grounded, verified answer (with its evidence line), a plain "not found", or
    refuse with a note. `forced` (the last step): a refusal becomes "not found", with the
    unchecked answer named as such. `patches` are the run's (AgentStarted.patches): what each
    changes is in actors/agent/patches.py (here quote_checks, only_where, and through `ask_of`
    and `mismatch` the rest)."""
    text = answer.strip()
    scope = list(scope)
    if is_not_found(text):
        return Verdict(text if text.lower().startswith("not found") else f"{NOT_FOUND}. {text}")
    cite = citation(args, text)
    if cite is not None and strict:
        cite = header_cited(cite)
    if cite is None:
        why = (
            "Your answer quotes no line. Give source (path:LINE) and quote (that line, copied "
            f'exactly from an observation), or answer "{NOT_FOUND}".'
        )
        return _refused(why, text, forced)
    observations = list(observations)
    shown = shown_lines(observations)
    checks = patched(patches, "quote_checks")
    checked = ground(shown, cite, strict=strict, relocate=checks)
    if isinstance(checked, str):
        return _refused(checked, text, forced)
    ask = ask_of(question, patches)
    if patched(patches, "only_where") and (why := only_where(question, text)) is not None:
        return _refused(why, text, forced)
    if checks and ask == "value" and in_prose(next((ls for p, ls in shown.items() if p == checked.path), {}), checked.line):
        why = (
            f"Your quote {checked.path}:{checked.line} is from a docstring or a comment, which describes the code. "
            "Quote the line of code that sets or returns the value."
        )
        return _stay(_refused(why, text, forced))
    if checks and ask == "override":
        member = (question_name(question, patches) or "").rpartition(".")[2]
        inside = override_owner(observations, checked) is not None
        if member and not inside and not re.search(rf"\bdef\s+{re.escape(member)}\b", checked.text):
            why = (
                f"The question asks which class overrides {member}, and your quote is not a line of an override of it. "
                f"Quote the `def {member}(` line of the override (find_definition of the method shows its overrides)."
            )
            shown_overrides = shows_overrides(observations)
            refused = _refused(why, text, forced)
            return _stay(refused) if shown_overrides else refused
    away = outside(checked, scope) if strict and ask == "value" else None
    if away is not None:  # a value asked of a named definition is read from that definition
        path, a, b = away
        why = (
            f"The question asks about the definition in {path} lines {a}-{b}; your quote is {checked.path}:"
            f"{checked.line}, outside it (another definition's value). Read {path} from line {a} and quote "
            "the line of it that states the answer."
        )
        refused = _refused(why, text, forced)
        return refused if forced else Verdict(None, why, read=(path, a))
    if strict and ask == "override" and scope and outside(checked, scope) is None:
        # the named method's own line: the override is elsewhere
        member = (question_name(question, patches) or "").rpartition(".")[2]
        asked = set(re.findall(r"\b[A-Z]\w+", question))
        cls = next((c for c in re.findall(r"\b([A-Z]\w+)", _without_citations(text)) if c not in asked | SENTENCE_WORDS), None)
        why = (
            f"Your quote {checked.path}:{checked.line} is the method the question names, not its override. Quote the "
            "`def` line of the overriding method in the subclass (its definition lists where it is overridden)."
        )
        if forced:
            return _refused(why, text, forced)
        return Verdict(None, why, find=f"{cls}.{member}" if cls and member else None)
    owner = override_owner(observations, checked) if strict and ask == "override" else None
    if owner and not re.search(rf"(?<![\w.]){re.escape(owner.split('.')[-1])}(?!\w)", _without_citations(text)):
        why = (
            f"Your quote {checked.path}:{checked.line} is in {owner}'s override, and your answer does not name "
            f"{owner}. Answer with the class whose override you quote."
        )
        return _stay(_refused(why, text, forced))
    wrong = mismatch(question, text, checked.text, class_lines(shown), strict=strict, patches=patches)
    if checks and owner:  # a line of the override the answer names: its `def` line is not needed
        wrong = None
    if wrong is not None and strict and ask == "value":
        resolved = through_names(question, text, checked, shown)
        if resolved is None and checks:  # the named definition's best line for the question holds it
            resolved = through_scope(question, text, scope, shown, patches)
        if resolved is not None:  # the quote uses a name; the line setting that name holds the value
            checked, wrong = resolved, None
    if wrong is None and checks and ask == "value":
        wrong = other_string(text, checked.text)
    if wrong is not None:
        return _refused(wrong, text, forced)
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