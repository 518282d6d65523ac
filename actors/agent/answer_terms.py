"""The words and values of a question, an answer and a quoted line (pure): what the mismatch checks
(actors/agent/mismatch.py) and the verify step (actors/agent/verify.py) both read them by.

Values a line holds (`quoted_values`: numbers, strings, True/False/None), an answer without its
citations, the words of a text or of code identifiers (`terms`), the code names an answer gives,
the words an answer adds to its question (`new_tokens`), and whether a class is one a question
asks about (`about`, at any depth of bases for a question asking past the class it names).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from actors.agent.evidence import SOURCE
from actors.tools.search import STOP_WORDS

LITERAL = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.])|(['\"]).+?\1|\b(True|False|None)\b")
STRING = re.compile(r"[fbr]?(['\"])(?P<s>.+?)\1")
NUMBER = re.compile(r"(?<![\w.:/-])-?\d+(?:\.\d+)?(?![\w])")


def quoted_values(quote: str) -> set[str]:
    """The values a quoted line holds: numbers (800.0 also as 800), strings, True/False/None."""
    out: set[str] = set()
    for n in NUMBER.findall(quote):
        out.add(n)
        if re.fullmatch(r"-?\d+\.0+", n):
            out.add(n.split(".")[0])
    out |= {m["s"] for m in STRING.finditer(quote) if m["s"].strip()}
    out |= set(re.findall(r"\b(True|False|None)\b", quote))
    return out


def without_citations(answer: str) -> str:
    text = SOURCE.sub(" ", answer)
    return re.sub(r"\blines? \d+(\s*-\s*\d+)?\b", " ", text, flags=re.IGNORECASE)


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


def terms(text: str) -> set[str]:
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


# A question that asks past the named class ("its base class in turn subclasses ...").
HOPS = re.compile(r"\b(in turn|that base|its base|base class of (its|the)|parent of|grand\w*|indirectly|transitively|ancestors?)\b", re.IGNORECASE)


def about(name: str, question: str, classes: Mapping[str, tuple[str, ...]]) -> bool:
    """Whether a class is one the question names, or a base (at any depth) of one it names."""
    named = set(re.findall(r"\b[A-Z]\w+", question))
    if not named or name in named:
        return True
    if not HOPS.search(question):  # one hop: the class line must be the named class's own
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


WHERE = re.compile(r"\s*(where|in which (file|module)|which (file|module))\b", re.IGNORECASE)
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
    text = without_citations(re.split(r"\bEvidence:", answer)[0])
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


def code_names(answer: str) -> list[str]:
    """The code names an answer gives: in backticks, or shaped like code (snake_case, CamelCase)."""
    text = SOURCE.sub(" ", answer)
    names = [(a or b).strip("()") for a, b in _CODE.findall(text)]
    return [n for n in dict.fromkeys(names) if n and not re.fullmatch(r"[\w/.-]+\.(py|md|txt|json|toml|yaml|yml)", n)]


def name_hint(text: str) -> str:
    """A class or qualified name in the text, to point the agent at its definition."""
    m = re.search(r"\b([A-Z]\w+(?:\.\w+)?)\b", text)
    return m.group(1) if m else ""


__all__ = ["HOPS", "LITERAL", "NUMBER", "STRING", "WHERE", "about", "code_names", "name_hint", "new_tokens", "quoted_values", "terms", "without_citations"]
