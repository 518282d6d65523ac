"""What a question asks for, and the code names it gives (pure: text in, text out).

`ask_of` classes a question by what its answer must be (a value, a message, a base class, an
override, a name, or any); `question_name` and `question_names` find the code names it gives,
which the agent looks up before the model's first step. The verify step
(actors/agent/mismatch.py) judges an answer's quote against both.
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Collection

from actors.agent.patches import patched

_ASKS: list[tuple[str, re.Pattern[str]]] = [
    ("base", re.compile(r"\b(subclass(es)?|inherits?|inherited|base class(es)?|derives?|derived|parent class|superclass)\b", re.I)),
    ("message", re.compile(r"\b(message|error text|text of|what does [\w ]+ (say|print|log)|wording|says)\b", re.I)),
    ("override", re.compile(r"\b(overrides?|overridden|overriding|redefines?)\b", re.I)),
    ("value", re.compile(
        r"\b(default|value|how (many|much|long|often)|what (number|size|limit|timeout|port|version|length)|"
        r"maximum|minimum|max\w*|min|limit|set to|initial|constant|threshold|interval|capacity|\w*size|"
        r"\w*len|length|upper|lower|at most|at least|falls? back)\b", re.I)),
    ("name", re.compile(r"\b(which|what) (method|function|class|exception|attribute|constant|variable|property|decorator)\b"
                        r"(?! does \w+ (subclass|inherit))", re.I)),
]
ASKED_KIND = re.compile(r"\b(which|what) (method|function|class|exception|attribute|constant|variable|property|decorator)\b", re.I)
# Patch kind_words: up to two words may stand between (which module-level function, what
# private helper method).
_KINDS = r"(method|function|class|exception|attribute|constant|variable|property|decorator)"
ASKED_KIND_WORDS = re.compile(rf"\b(which|what) (?:[\w-]+ ){{0,2}}?{_KINDS}\b(?! does \w+ (subclass|inherit))", re.I)

# Patch head_phrase: what a "which/what X ..." question asks for is its head phrase, the words
# between the question word and the verb or preposition after them ("Which close code does
# ... use when an incoming message ..." asks for a code, not a message).
_HEAD = re.compile(
    r"^\s*(?:which|what)\s+(?:(?:is|are|was|were)\s+)?(?:(?:the|a|an)\s+)?(?!(?:does|do|did)\b)(?P<head>(?:[\w.-]+\s+){0,3}?[\w.-]+?)"
    r"\s+(?:does|do|did|is|are|was|were|will|would|can|could|should|has|have|of|that|when|in|for|to|from|if|on|at|by|with)\b",
    re.I,
)
_HEAD_MESSAGE = re.compile(r"\b(message|text|wording|warning)s?\b", re.I)
_HEAD_VALUE = re.compile(
    r"\b(code|number|default|value|size|limit|timeout|port|count|status|interval|threshold|"
    r"delay|length|rate|version|range|amount|capacity)s?\b",
    re.I,
)
_SAYS = re.compile(r"^\s*what\s+does\s+\S+(?:\s+\S+){0,3}?\s+(?:log|print|say|warn|write|emit)\b", re.I)


def head_ask(question: str) -> str | None:
    """What a "which/what X ..." question asks for, from its head phrase X alone: message,
    value, or None when the head names neither (the whole question decides then). "What
    does Name.method log ..." asks for a message (dotted names included)."""
    if _SAYS.match(question):
        return "message"
    m = _HEAD.match(question)
    if m is None:
        return None
    head = m["head"]
    if _HEAD_MESSAGE.search(head):
        return "message"
    if _HEAD_VALUE.search(head):
        return "value"
    return None


def ask_of(question: str, patches: Collection[str] = ()) -> str:
    """What the question asks for: name, base, override, message, value or any. With patch
    head_phrase, a "which/what X ..." question's head phrase X decides first (`head_ask`);
    with kind_words, "which module-level function" asks for a name too (`ASKED_KIND_WORDS`)."""
    if patched(patches, "head_phrase") and (head := head_ask(question)) is not None:
        return head
    kind_words = patched(patches, "kind_words")
    for kind, pattern in _ASKS:
        if pattern.search(question) or (kind == "name" and kind_words and ASKED_KIND_WORDS.search(question)):
            return kind
    return "any"


CAMEL_NAME = re.compile(r"\b([A-Z][a-z0-9]+[A-Z]\w*|[A-Z]{2,}[a-z]\w*|[A-Z][A-Z0-9]*_[A-Z0-9_]+)\b")
# Names a question gives as code, most specific first: `Class.member` (or `member()` of one),
# CamelCase, CONSTANT_CASE, snake_case, and a capitalised word said to be a class.
_QUESTION_NAMES = (
    re.compile(r"\b([A-Z]\w*\.[A-Za-z_]\w*)(?:\(\))?"),
    CAMEL_NAME,
    re.compile(r"\b([A-Z][A-Z0-9]*_[A-Z0-9_]+)\b"),
    re.compile(r"`?\b([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\b`?(?:\(\))?"),
    re.compile(r"\b([A-Z][a-z]\w*) (?:class|object|instance|exception|method|function)\b"),
    re.compile(r"\b(?:class|exception) ([A-Z]\w+)\b"),
)
# Python's own names: a question naming one is not asking where the package defines it.
_BUILTINS = frozenset(n for n in dir(builtins) if n[:1].isupper()) | {"Python", "Enum", "Generic", "Protocol"}
SENTENCE_WORDS = frozenset(
    "The It Its This That These Those A An In If For When Which What Where How Evidence Not Python Yes No Line File".split()
)
_QUESTION_WORDS = frozenset("Which What Where When Why How Who Whose Does Do Is Are Can The This That In If For".split())
# Patch private_names: the same names with Python's private prefix (`_LAST_GLIBC_MINOR`,
# `_TrimmedRelease`, `_parse_version`), which `\b` before a capital or a letter never matched.
_PRIVATE_NAMES = (
    re.compile(r"(?<!\w)(_*[A-Z]\w*\.[A-Za-z_]\w*)(?:\(\))?"),
    re.compile(r"(?<!\w)(_*(?:[A-Z][a-z0-9]+[A-Z]\w*|[A-Z]{2,}[a-z]\w*|[A-Z][A-Z0-9]*_[A-Z0-9_]+))\b"),
    re.compile(r"(?<!\w)(_*[A-Z][A-Z0-9]*_[A-Z0-9_]+)\b"),
    re.compile(r"`?(?<!\w)(_*[a-z][a-z0-9]*(?:_[a-z0-9]+)+)\b`?(?:\(\))?"),
    re.compile(r"(?<!\w)(_*[A-Z][a-z]\w*) (?:class|object|instance|exception|method|function)\b"),
    re.compile(r"\b(?:class|exception) (_*[A-Z]\w+)\b"),
)


def _name_patterns(patches: Collection[str]) -> tuple[re.Pattern[str], ...]:
    return _PRIVATE_NAMES if patched(patches, "private_names") else _QUESTION_NAMES


def question_name(question: str, patches: Collection[str] = ()) -> str | None:
    """The name whose definition the agent reads before the model's first step: the most
    specific code name the question gives (Python's built-ins aside), or None. With patch
    private_names, names with a leading underscore too."""
    for pattern in _name_patterns(patches):
        for m in pattern.finditer(question):
            name = m.group(1).rstrip(".")
            if name.split(".")[0] not in _BUILTINS | _QUESTION_WORDS and len(name) > 2:
                return name
    return None


_PRIVATE_NAME = re.compile(r"(?<![\w.])(_+[a-z]\w*)\b")  # `_process_error`: question_name's patterns miss it


def question_names(question: str, patches: Collection[str] = ()) -> list[str]:
    """Every code name the question gives (`question_name` is the first of them), without
    those a longer one holds (`Connection` of `Connection.next_event`)."""
    found: list[str] = []
    for pattern in (*_name_patterns(patches), _PRIVATE_NAME):
        for m in pattern.finditer(question):
            name = m.group(1).rstrip(".")
            if name.split(".")[0] not in _BUILTINS | _QUESTION_WORDS and len(name) > 2 and name not in found:
                found.append(name)
    return [n for n in found if not any(n != o and re.search(rf"(?<!\w){re.escape(n)}(?!\w)", o) for o in found)]


def names_shown(question: str, observation: str, patches: Collection[str] = ()) -> bool:
    """Whether a definition the tools showed holds every name the question gives (a member by
    its own name): what the question asks about is in view, not just one name of several."""
    return all(
        re.search(rf"(?<![\w]){re.escape(n.rpartition('.')[2])}(?!\w)", observation)
        for n in question_names(question, patches)
    )
