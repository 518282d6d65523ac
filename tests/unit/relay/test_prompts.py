"""The Builder's prompt (item, baton, retrieved turns, files, defect capsule; bounded) and
the Verifier's coherence check (its request, and reading its verdict, garbage included)."""

from __future__ import annotations

import json
import re

import pytest

from actors.relay.baton import make_baton
from actors.relay.prompts import (
    BATON_CHARS,
    CONTEXT_CHARS,
    DIFF_CHARS,
    FILES_CHARS,
    MAX_CONTEXT_TURNS,
    builder_request,
    coherence_request,
    files_text,
    read_coherence,
)
from actors.relay.roadmap import RoadmapItem
from actors.relay.events import DefectCapsule

ITEM = RoadmapItem(
    title="Create the add function",
    acceptance_criteria=["add(2, 3) returns 5", "add(-1, 1) returns 0"],
    details="Put it in calc.py",
)
DEFECT = DefectCapsule(
    defect_id="defect-7",
    defect_type="test",
    severity="high",
    description="tests/test_calc.py::test_add failed: assert add(2, 3) == 5, got 6",
    suggested_fix="add must return a + b, not a * b",
    metadata={"failing_tests": ["tests/test_calc.py::test_add", "tests/test_calc.py::test_neg"]},
)


def _user(request) -> str:
    return request.messages[-1]["content"]


def test_builder_prompt_has_item_criteria_baton_context_and_files() -> None:
    request = builder_request(
        ITEM,
        context=["past turn about subtract", "", "past turn about multiply"],
        baton="[Turn 3, item 1, PASSED] set up the package",
        defect=None,
        files={"calc.py": "def add(a, b):\n    return a * b\n"},
        model="local",
        params={"seed": 1},
    )
    system = request.messages[0]["content"]
    assert "File: path/to/module.py" in system and "Verification hints:" in system
    user = _user(request)
    assert "Roadmap item: Create the add function" in user
    assert "- add(2, 3) returns 5\n- add(-1, 1) returns 0" in user
    assert "Details: Put it in calc.py" in user
    assert "[Turn 3, item 1, PASSED] set up the package" in user
    assert "1. past turn about subtract\n2. past turn about multiply" in user  # blanks dropped
    assert "File: calc.py\n```python\ndef add(a, b):\n    return a * b\n```" in user
    assert "FAILED" not in user
    assert request.params == {"max_tokens": 1024, "temperature": 0.2, "seed": 1}
    assert request.response_schema is None  # the builder answers in prose and code


def test_defect_capsule_reaches_the_builder_prompt_last() -> None:
    request = builder_request(ITEM, context=[], baton="", defect=DEFECT, files={}, model="m", params={})
    user = _user(request)
    defect_at = user.index("Your last attempt FAILED verification")
    assert defect_at > user.index("Current files: none yet")
    section = user[defect_at:]
    assert "Defect: test (severity high)" in section
    assert "got 6" in section
    assert "- tests/test_calc.py::test_add\n- tests/test_calc.py::test_neg" in section
    assert "Suggested fix: add must return a + b, not a * b" in section
    # a retry asks a different question: replay tells the two apart by hash
    plain = builder_request(ITEM, context=[], baton="", defect=None, files={}, model="m", params={})
    assert plain.hash() != request.hash()


def test_builder_prompt_stays_bounded_with_huge_inputs() -> None:
    request = builder_request(
        ITEM,
        context=["c" * 10_000 for _ in range(20)],
        baton="b" * 50_000,
        defect=DEFECT.model_copy(update={"description": "d" * 50_000}),
        files={f"pkg/m{n}.py": "x = 1\n" * 5_000 for n in range(30)},
        model="m",
        params={},
    )
    user = _user(request)
    assert len(user) < BATON_CHARS + MAX_CONTEXT_TURNS * (CONTEXT_CHARS + 10) + FILES_CHARS + 6_000
    assert len(re.findall(r"^\d+\. ccc", user, re.M)) == MAX_CONTEXT_TURNS
    assert "Other files (not shown): " in user and "pkg/m29.py" in user


def test_coherence_request_shows_criteria_summary_hints_and_diff() -> None:
    baton = make_baton("Added add.\n\nHints: run pytest -k add\n", [], ["calc.py"], None, None)
    diff = "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a * b\n+    return a + b\n"
    request = coherence_request(ITEM, baton, diff, "local", {"seed": 3})
    user = _user(request)
    assert "- add(2, 3) returns 5" in user
    assert "Added add." in user and "run pytest -k add" in user
    assert "+    return a + b" in user
    schema = request.response_schema
    assert schema is not None and set(schema["required"]) == {"meets_criteria", "reason", "unmet"}
    assert schema["properties"]["meets_criteria"] == {"type": "boolean"}
    assert request.params["seed"] == 3 and request.params["temperature"] == 0.0
    long = coherence_request(ITEM, "summary text", "+x\n" * 10_000, "m", {})
    assert "(diff cut)" in _user(long) and len(_user(long)) < DIFF_CHARS + 2_000


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ({"meets_criteria": True, "reason": "add returns a + b", "unmet": []}, (True, "add returns a + b", [])),
        (
            '```json\n{"meets_criteria": false, "reason": "no test", "unmet": ["add(-1, 1) returns 0"]}\n```',
            (False, "no test", ["add(-1, 1) returns 0"]),
        ),
        ('{"meets_criteria": "yes", "reason": "", "unmet": ["none"]}', (True, "no reason given", [])),
        ({"meets_criteria": False, "reason": "x", "unmet": "the second one"}, (False, "x", ["the second one"])),
    ],
)
def test_read_coherence(reply, expected) -> None:
    assert read_coherence(reply) == expected


@pytest.mark.parametrize(
    "garbage",
    [
        "The change looks good to me!",
        "",
        None,
        {"reason": "forgot the verdict"},
        {"meets_criteria": "maybe", "reason": "?"},
        '{"meets_criteria": 1}',
        json.dumps([1, 2]),
    ],
)
def test_read_coherence_garbage_never_passes(garbage) -> None:
    meets, reason, unmet = read_coherence(garbage)
    assert meets is False
    assert reason.startswith("unreadable coherence verdict")
    assert unmet == []


def test_hidden_files_are_shown_by_name_only() -> None:
    text = files_text({"app.py": "x = 1\n", ".ruff.toml": "lint.select = ['F']\n", ".github/ci.yml": "on: push\n"})
    assert "File: app.py" in text and "x = 1" in text
    assert "lint.select" not in text and "on: push" not in text
    assert "Other files (not shown): .github/ci.yml, .ruff.toml" in text
