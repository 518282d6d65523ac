"""The BatonPacket and the bounded memory the next turn reads: summaries stay small however
big the reply, and the context stays under its limit however long the relay runs."""

from __future__ import annotations

from actors.relay.baton import (
    HINT_CHARS,
    MAX_HINTS,
    SUMMARY_LIMIT,
    baton_context,
    make_baton,
    parse_hints,
)
from actors.relay.edits import parse_edits
from actors.relay.events import BatonPacket

REPLY = """\
I added `add` to calc.py and a test for it.
Negative numbers work too.

File: calc.py
```python
# Verification hints: this comment is code, not the hints section
def add(a, b):
    return a + b
```

**Verification hints:**
- run `pytest tests/test_calc.py`
- add(-1, 1) == 0

Anything else is up to you.
"""


def test_baton_carries_reply_summary_files_and_hints() -> None:
    edits = parse_edits(REPLY)
    baton = make_baton(REPLY, edits, ["calc.py"], ["ruff check ."], {"turn_number": 4})
    assert isinstance(baton, BatonPacket)
    assert baton.response_text == REPLY
    assert baton.builder_summary.startswith("I added `add` to calc.py and a test for it. Negative numbers work too.")
    assert baton.builder_summary.endswith("Files: calc.py")
    assert "def add" not in baton.builder_summary  # code stays out of the summary
    assert "File:" not in baton.builder_summary.splitlines()[0]
    assert baton.verification_hints == ["run `pytest tests/test_calc.py`", "add(-1, 1) == 0", "ruff check ."]
    assert baton.files_changed == ["calc.py"]
    assert baton.metadata == {"edits": {"write": 1}, "turn_number": 4}


def test_hints_on_one_line_and_absent() -> None:
    assert parse_hints("Done.\nHints: run pytest -k add\n") == ["run pytest -k add"]
    assert parse_hints("Hinting that more is to come.\n- not a hint\n") == []
    assert parse_hints("No hints section here.\n- a bullet\n") == []
    many = "Verification hints:\n" + "".join(f"- check {n} " + "x" * 400 + "\n" for n in range(20))
    hints = parse_hints(many)
    assert len(hints) == MAX_HINTS
    assert all(len(h) <= HINT_CHARS for h in hints)


def test_summary_stays_bounded_for_a_50_kb_reply() -> None:
    prose = ("The builder explains at length what it did and why it did it. " * 4 + "\n") * 150
    code = "File: big.py\n```python\n" + "value = 1\n" * 2000 + "```\n"
    reply = prose + code + prose
    assert len(reply) > 50_000
    files = [f"pkg/module_{n}.py" for n in range(300)]
    baton = make_baton(reply, parse_edits(reply), files, None, None)
    assert len(baton.builder_summary) <= SUMMARY_LIMIT
    assert "value = 1" not in baton.builder_summary
    assert "pkg/module_0.py" in baton.builder_summary
    assert "more)" in baton.builder_summary  # the files it could not list are counted
    assert baton.files_changed == files  # the field itself keeps them all
    assert baton.response_text == reply


def test_summary_without_prose_or_files() -> None:
    baton = make_baton("```python\nx = 1\n```\n", [], [], None, None)
    assert baton.builder_summary == "(no prose)\nFiles: none"


def _batons(count: int) -> list[BatonPacket]:
    return [
        make_baton(
            f"Turn {n} did thing number {n}. " + "detail " * 100,
            [],
            [f"file_{n}.py"],
            None,
            {"turn_number": n, "roadmap_index": n % 3, "status": "PASSED"},
        )
        for n in range(1, count + 1)
    ]


def test_context_is_bounded_for_100_batons_and_most_recent_first() -> None:
    batons = _batons(100)
    for limit in (300, 1000, 2400, 5000):
        text = baton_context(batons, limit)
        assert len(text) <= limit
    text = baton_context(batons, 2400)
    lines = text.splitlines()
    assert lines[0].startswith("[Turn 100, item 2, PASSED] Turn 100 did thing number 100.")
    assert lines[1].startswith("[Turn 99,")
    assert lines[-1].endswith("earlier turns not shown)")
    assert "detail detail" in text  # summaries, not the full replies
    assert sum(len(b.response_text) for b in batons) > 20 * len(text)


def test_context_cuts_a_single_huge_summary_and_handles_nothing() -> None:
    assert baton_context([], 1000) == ""
    big = BatonPacket(response_text="x", builder_summary="y" * 5000)
    text = baton_context([big], 200)
    assert len(text) <= 200
    assert text.startswith("[1 turn ago] yyy")
    assert baton_context(_batons(3), 0) == ""
