"""HumanEval as relay work: the docstring's examples become visible tests, the hidden tests
judge, and a problem selection reads as a user types it. The benchmark's own reference
solutions are the ground truth: they must pass both the visible and the hidden tests, and
the stub a relay starts from must pass neither."""

from __future__ import annotations

import ast
import tempfile
from pathlib import Path

import pytest

from actors.relay import checks
from actors.relay.edits import target_file
from evals.humaneval import (
    RUFF_IGNORE,
    SOLUTION,
    TESTS,
    Problem,
    examples,
    judge,
    load_problems,
    parse_selection,
    roadmap_item,
    visible_tests,
    workspace,
)

PROBLEMS = load_problems()


def problem(doc: str, name: str = "f", test: str = "def check(candidate):\n    assert candidate(1) == 2\n") -> Problem:
    prompt = f'def {name}(x):\n    """{doc}\n    """\n'
    return Problem(number=0, task_id="T/0", prompt=prompt, entry_point=name, test=test)


def solved(p: Problem) -> dict[str, str]:
    return {**workspace(p), SOLUTION: p.prompt + p.canonical_solution}


def test_all_164_problems_load_and_every_visible_test_file_is_python():
    assert [p.number for p in PROBLEMS] == list(range(164))
    for p in PROBLEMS:
        ast.parse(visible_tests(p))
        assert p.entry_point in p.prompt


@pytest.mark.parametrize(
    ("doc", "want"),
    [
        (">>> f(1)\n    2\n    >>> f([1, 'a'])\n    [2]", [("f(1)", 2), ("f([1, 'a'])", [2])]),
        ("For example:\n    f(3) == 4\n    f(4) ➞ 'x'\n    f(5) => true", [("f(3)", 4), ("f(4)", "x"), ("f(5)", True)]),
        ("Examples:\n    f(1) ==> False\n    f(2) # => 'No' (why)", [("f(1)", False)]),
        ("For x = [1,2] the output should be 10", [("f([1,2])", 10)]),
        (">>> g(1)\n    2\n    >>> f(1)\n    not a value", []),  # another function; an unreadable value
        ("f(1) is about 2", []),
    ],
)
def test_examples_are_read_in_the_forms_humaneval_writes_them(doc, want):
    assert [(e.call, e.want) for e in examples(problem(doc))] == want


def test_a_failing_visible_test_says_the_call_what_it_returned_and_what_the_docstring_says():
    p = problem(">>> f(1)\n    2")
    files = {**workspace(p), SOLUTION: "def f(x):\n    return x + 5\n"}
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in files.items():
            (Path(tmp) / name).write_text(text)
        check, failing = checks.run_pytest(Path(tmp))
    assert not check.passed and failing == [f"{TESTS}::test_example_1"]
    assert "f(1) returned 6, the docstring says 2" in check.details


def test_a_docstring_without_examples_still_gives_a_test_that_the_function_exists():
    text = visible_tests(problem("Does something."))
    assert "def test_f_exists" in text and "callable(f)" in text


@pytest.mark.parametrize("n", range(0, 40, 3))
def test_the_reference_solution_passes_visible_and_hidden_tests_and_the_stub_neither(n):
    p = PROBLEMS[n]
    assert judge(solved(p), p) == (True, "")
    passed, why = judge(workspace(p), p)
    assert not passed and "NotImplementedError" in why
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in solved(p).items():
            (Path(tmp) / name).write_text(text)
        assert checks.run_pytest(Path(tmp))[0].passed
        assert checks.run_ruff(Path(tmp), ignore=RUFF_IGNORE)[0].passed


def test_judge_stops_an_endless_solution_and_reports_a_missing_file():
    p = problem("", test="def check(candidate):\n    candidate(1)\n")
    from actors.relay.sandbox import SandboxPolicy

    passed, why = judge({SOLUTION: "def f(x):\n    while True:\n        pass\n"}, p, SandboxPolicy(timeout_s=2, cpu_s=2))
    assert not passed and "stopped by the sandbox" in why
    assert judge({}, p) == (False, f"no {SOLUTION}")


def test_the_roadmap_item_names_the_one_file_the_builder_writes():
    p = PROBLEMS[0]
    item = roadmap_item(p)
    assert p.entry_point in item.title and item.acceptance_criteria
    assert target_file([item.title, item.details, *item.acceptance_criteria], workspace(p)) == SOLUTION


@pytest.mark.parametrize(
    ("text", "want"),
    [("0-3", [0, 1, 2, 3]), ("5", [5]), ("3,1,2-3", [1, 2, 3]), (" 0 - 1 , 7 ", [0, 1, 7])],
)
def test_a_selection_reads_ranges_and_lists(text, want):
    assert parse_selection(text, 164) == want


@pytest.mark.parametrize(
    ("text", "message"),
    [("0-164", "not 164"), ("5-2", "backwards"), ("a", "not a number"), ("", "no problem"), ("1;2", "not a number")],
)
def test_a_bad_selection_is_one_clear_error(text, message):
    with pytest.raises(ValueError, match=message):
        parse_selection(text, 164)
