"""The verdict: PASSED only when everything passed; concrete findings FAILED with the worst
as the defect; an incoherent but clean change RETRY; the same inputs, the same words."""

from __future__ import annotations

from actors.relay.verdict import MAX_DESCRIPTION_CHARS, NOT_RUN, STOPPED, decide_verdict, stopped_reason
from actors.relay.events import TurnVerified, VerifierCheck


def check(name: str, kind: str, passed: bool, details: str = "") -> VerifierCheck:
    return VerifierCheck(name=name, kind=kind, passed=passed, details=details)  # type: ignore[arg-type]


RUFF_OK = check("ruff", "lint", True, "no findings")
TESTS_OK = check("pytest", "test", True, "3 passed in 0.1s")
RUFF_BAD = check("ruff", "lint", False, "1 finding\nsolution.py:2:12: F821 Undefined name `x`")
TESTS_BAD = check("pytest", "test", False, "1 of 3 tests failed\ntest_s.py::test_b: assert 1 == 2")
HUNG = check("pytest", "test", False, f"{STOPPED} (timeout): timeout: still running after 2 s wall time")


def test_everything_passed_and_coherent_is_passed_without_a_capsule():
    status, report, capsule = decide_verdict([RUFF_OK, TESTS_OK], (True, "meets both criteria", []), [], defect_id="d1")
    assert status == "PASSED" and capsule is None
    assert report.startswith("PASSED") and "2 of 2 checks passed" in report and "coherence: yes" in report


def test_a_check_that_did_not_run_passes_but_the_report_says_so():
    missing = check("ruff", "lint", True, f"{NOT_RUN} ruff is not installed")
    status, report, capsule = decide_verdict([missing, TESTS_OK], None, [], defect_id="d1")
    assert status == "PASSED" and capsule is None
    assert "ruff (lint): not run" in report


def test_failing_tests_are_a_high_test_defect_naming_them():
    failing = ["test_s.py::test_b"]
    status, report, capsule = decide_verdict([RUFF_OK, TESTS_BAD], (True, "ok", []), failing, defect_id="d2")
    assert status == "FAILED" and capsule is not None
    assert (capsule.defect_id, capsule.defect_type, capsule.severity) == ("d2", "test", "high")
    assert capsule.metadata["failing_tests"] == failing
    assert "test_s.py::test_b" in capsule.description and "assert 1 == 2" in capsule.description
    assert "test_s.py::test_b" in (capsule.suggested_fix or "")
    assert "failing tests: test_s.py::test_b" in report


def test_lint_alone_is_a_medium_lint_defect():
    status, _, capsule = decide_verdict([RUFF_BAD, TESTS_OK], None, [], defect_id="d3")
    assert status == "FAILED" and capsule is not None
    assert (capsule.defect_type, capsule.severity) == ("lint", "medium")
    assert "F821" in capsule.description
    assert capsule.metadata["failed_checks"] == ["ruff"]


def test_the_worst_problem_names_the_defect_and_all_are_described():
    status, _, capsule = decide_verdict([RUFF_BAD, TESTS_BAD], None, ["test_s.py::test_b"], defect_id="d4")
    assert status == "FAILED" and capsule is not None
    assert (capsule.defect_type, capsule.severity) == ("test", "high")
    assert "F821" in capsule.description and "assert 1 == 2" in capsule.description


def test_a_command_the_sandbox_stopped_is_critical():
    assert stopped_reason(HUNG) == "timeout"
    status, _, capsule = decide_verdict([RUFF_BAD, HUNG], (True, "ok", []), [], defect_id="d5")
    assert status == "FAILED" and capsule is not None
    assert (capsule.defect_type, capsule.severity) == ("test", "critical")
    assert capsule.metadata["stopped"] == "timeout"
    assert "infinite loop" in (capsule.suggested_fix or "")
    memory = check("probe-x", "probe", False, f"{STOPPED} (memory): memory: went past its 256 MB")
    _, _, capsule = decide_verdict([memory], None, [], defect_id="d6")
    assert capsule is not None and (capsule.defect_type, capsule.severity) == ("probe", "critical")
    assert "memory" in (capsule.suggested_fix or "")


def test_clean_but_incoherent_is_retry_with_the_missing_criteria():
    coherence = (False, "the function ignores negative numbers", ["handles negative input", "returns a list"])
    status, report, capsule = decide_verdict([RUFF_OK, TESTS_OK], coherence, [], defect_id="d7")
    assert status == "RETRY" and capsule is not None
    assert (capsule.defect_type, capsule.severity) == ("coherence", "medium")
    assert "ignores negative numbers" in capsule.description
    assert capsule.suggested_fix == "Meet these acceptance criteria: handles negative input; returns a list"
    assert capsule.metadata["coherent"] is False
    assert "coherence: NO" in report


def test_a_failed_coherence_check_in_the_list_is_also_retry():
    status, _, capsule = decide_verdict(
        [TESTS_OK, check("coherence", "coherence", False, "does not parse the date")], None, [], defect_id="d8"
    )
    assert status == "RETRY" and capsule is not None and capsule.defect_type == "coherence"


def test_concrete_failures_win_over_coherence():
    status, _, capsule = decide_verdict([TESTS_BAD], (False, "wrong idea", []), ["t::a"], defect_id="d9")
    assert status == "FAILED" and capsule is not None and capsule.defect_type == "test"
    assert "wrong idea" in capsule.description


def test_the_description_stays_short_however_many_problems():
    many = [check(f"probe{i}", "probe", False, "x" * 2_000) for i in range(20)]
    ids = [f"t.py::test_{i}" for i in range(50)]
    _, _, capsule = decide_verdict(many, None, ids, defect_id="d10")
    assert capsule is not None
    assert len(capsule.description) <= MAX_DESCRIPTION_CHARS
    assert "more" in capsule.description
    assert capsule.metadata["failing_tests"] == ids  # the full list stays in the metadata


def test_the_verdict_is_deterministic_and_fits_the_event():
    args = ([RUFF_BAD, TESTS_BAD], (False, "no", ["a"]), ["test_s.py::test_b"])
    first = decide_verdict(*args, defect_id="d11")
    assert first == decide_verdict(*args, defect_id="d11")
    status, report, capsule = first
    event = TurnVerified(
        task_id="t",
        turn_id="v1",
        verified_turn_id="b1",
        turn_number=1,
        status=status,
        report=report,
        checks=args[0],
        defect_capsule=capsule,
    )
    assert event.defect_capsule == capsule
