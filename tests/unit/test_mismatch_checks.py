"""The verify step's checks (actors/agent/mismatch.py `CHECKS`): each a pure function of one
answer's case, chosen by what the question asks and by the run's patches, walked in order."""

from __future__ import annotations

from actors.agent import mismatch as checks_module
from actors.agent.asks import ask_of
from actors.agent.patches import DEFINITION_CHECKS, GROUNDED_PATCHES, KNOWN
from actors.agent.mismatch import (
    CHECKS,
    Case,
    base_class_line,
    base_past_the_named_class,
    gives_a_new_name,
    message_not_a_docstring,
    mismatch,
    name_on_quote,
    names_one,
    new_name_on_quote,
    not_restated,
    numbers_quoted,
    value_given,
)

WHICH_METHOD = "Which method of Reporter builds the text?"


def test_every_check_belongs_to_a_known_patch_or_to_every_run_and_every_ask_has_its_row():
    assert {patch for rows in CHECKS.values() for patch, _ in rows} - {None} <= KNOWN
    asked = {ask_of(q, GROUNDED_PATCHES) for q in (
        "Which class does QueueFullError subclass?", "Which method of Reporter builds the label?",
        "Which class overrides Store.read?", "What message does put raise?", "What is the default timeout?",
        "How does the scheduler restart?",
    )}
    assert asked == set(CHECKS) == {"base", "name", "override", "message", "value", "any"}


def test_the_case_carries_what_the_question_asks_under_the_runs_patches():
    q = "Which module-level function parses the version?"  # patch kind_words: it asks for a name
    assert Case.of(q, "a", "b").ask == "any"
    assert Case.of(q, "a", "b", patches=("kind_words",)).ask == "name"
    assert Case.of(q, "a", "b").classes == {}
    assert Case.of(q, "Settings", "x = 1").read_it == "find_definition(name='Settings')"
    assert Case.of(q, "it", "x = 1").read_it == "find_definition of the name you found"


def test_base_checks_read_the_class_line():
    q = "Which class does QueueFullError subclass?"
    assert "class Name(Base)" in (base_class_line(Case.of(q, "DispatchError", "timeout = 30")) or "")
    assert base_class_line(Case.of(q, "DispatchError", "class QueueFullError():")) is not None  # no base on it
    assert base_class_line(Case.of(q, "DispatchError", "class QueueFullError(DispatchError):")) is None
    hops = "Which class does QueueFullError's base class in turn subclass?"
    own = "class QueueFullError(DispatchError):"
    assert (DEFINITION_CHECKS, base_past_the_named_class) in CHECKS["base"]  # only runs with the patch
    why = base_past_the_named_class(Case.of(hops, "DispatchError", own, patches=(DEFINITION_CHECKS,))) or ""
    assert "find_definition(name='DispatchError')" in why


def test_name_checks_each_judge_one_thing():
    given = Case.of(WHICH_METHOD, "`Reporter` does.", "class Reporter:")
    assert "names only what the question gives" in (gives_a_new_name(given) or "")
    assert gives_a_new_name(Case.of(WHICH_METHOD, "`Reporter.make_label`", "def make_label(self):")) is None
    assert "names none" in (names_one(Case.of(WHICH_METHOD, "the one that builds it", "def label(self):")) or "")
    # the answer names `Reporter` (given) and `make_label` (new): only the new one must be on the quote
    both = Case.of(WHICH_METHOD, "`Reporter` calls `make_label`.", "class Reporter:")
    assert "`make_label`" in (new_name_on_quote(both) or "")
    assert name_on_quote(both) is None  # one of its names is on the quote


def test_value_checks_take_800_point_0_as_800_only_with_definition_checks():
    q = "What is the maximum sleep interval?"
    line = "max_sleep_interval_ms = 800.0"
    assert "800" in (numbers_quoted(Case.of(q, "800 ms", line)) or "")
    assert numbers_quoted(Case.of(q, "800 ms", line, patches=(DEFINITION_CHECKS,))) is None
    assert (DEFINITION_CHECKS, value_given) in CHECKS["value"]  # only runs with the patch
    assert "800.0" in (value_given(Case.of(q, "It sleeps a while.", line, patches=(DEFINITION_CHECKS,))) or "")


def test_a_docstring_is_no_message_with_definition_checks_only():
    q = "What message does put raise?"
    doc = '"""Raise QueueFullError when the queue is full."""'
    assert (DEFINITION_CHECKS, message_not_a_docstring) in CHECKS["message"]  # only runs with the patch
    assert "docstring" in (message_not_a_docstring(Case.of(q, "the queue is full", doc, patches=(DEFINITION_CHECKS,))) or "")


def test_restating_is_refused_except_for_a_where_question():
    assert not_restated(Case.of("How does the scheduler restart?", "The scheduler restarts.", "x")) is not None
    assert not_restated(Case.of("Where does the scheduler restart?", "The scheduler restarts.", "x")) is None


def test_a_check_runs_only_for_a_run_with_its_patch(monkeypatch):
    calls: list[str] = []

    def probe(name: str, why: str | None):
        def check(case: Case) -> str | None:
            calls.append(name)
            return why
        return check

    monkeypatch.setattr(checks_module, "CHECKS", {"any": (
        ("restated", probe("patched", None)), (None, probe("every run", "wrong")), (None, probe("after", "later")),
    )})
    q = "How does it work?"
    assert mismatch(q, "a", "b") == "wrong"
    assert calls == ["every run"]  # the patch's check skipped; the first refusal decides
    calls.clear()
    assert mismatch(q, "a", "b", patches=("restated",)) == "wrong"
    assert calls == ["patched", "every run"]


def test_the_first_refusal_in_the_table_decides():
    # names none: with names_one its note, not the later "quote does not show" one
    q, answer, quote = WHICH_METHOD, "The one that builds it.", "return x"
    assert "names none" in (mismatch(q, answer, quote, patches=("names_one",)) or "")
    assert mismatch(q, answer, quote) is None
