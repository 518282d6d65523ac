"""The Verifier's verdict (seed 004), pure: its checks and the coherence answer in, a status
(PASSED / FAILED / RETRY), a report and the DefectCapsule the next builder turn will carry out.

PASSED needs every check passed and, when asked, a coherent change. A check that found
something concrete (lint, tests, a probe, a command the sandbox had to stop) is FAILED; a
change that is clean but does not meet the item's acceptance criteria is RETRY: the builder
should try again with the reasons. The capsule names the worst problem (its type and
severity), says what was wrong in a few lines and how to fix it, and lists the failing test
ids, so a 1.5B builder gets a short, specific brief rather than a log.

The checks speak through `VerifierCheck.details`; the phrases below (written by
`actors.relay.checks`) mark a check the sandbox stopped, one that did not run, and a test
suite that collected nothing.
"""

from __future__ import annotations

import re

from actors.relay.events import DefectCapsule, DefectType, Severity, VerifierCheck, VerifierStatus

STOPPED = "stopped by the sandbox"  # details: f"{STOPPED} ({reason}): ..."
NOT_RUN = "not run:"  # details of a check whose tool is missing: it passes, and the report says so
NO_TESTS = "no tests collected"

MAX_PROBLEMS = 4  # problems the description spells out
MAX_PROBLEM_CHARS = 200
MAX_TEST_IDS_SHOWN = 5
MAX_DESCRIPTION_CHARS = 1_200

_STOPPED = re.compile(re.escape(STOPPED) + r" \(([\w ]+)\)")
_RANK: dict[Severity, int] = {"critical": 0, "high": 1, "medium": 2, "low": 3}
_SEVERITY: dict[DefectType, Severity] = {
    "test": "high", "probe": "high", "config": "high", "lint": "medium", "coherence": "medium",
}  # fmt: skip

Coherence = tuple[bool, str, list[str]]  # (meets the criteria, why, what is missing)


def stopped_reason(check: VerifierCheck) -> str | None:
    """Why the sandbox stopped the check's command ("timeout", "cpu", "memory", a signal), if it did."""
    match = _STOPPED.search(check.details)
    return match.group(1) if match else None


def severity_of(check: VerifierCheck) -> Severity:
    """A stopped command is critical (a hang or a blow-up, whatever the check); else by kind."""
    return "critical" if stopped_reason(check) else _SEVERITY[check.kind]


def decide_verdict(
    checks: list[VerifierCheck],
    coherence: Coherence | None,
    failing_tests: list[str],
    *,
    defect_id: str,
) -> tuple[VerifierStatus, str, DefectCapsule | None]:
    """The verdict on one builder turn. Deterministic: same inputs, same verdict and words."""
    failed = [c for c in checks if not c.passed]
    concrete = [c for c in failed if c.kind != "coherence"]
    incoherent = coherence is not None and not coherence[0]
    report = _report(checks, coherence, failing_tests)

    if not failed and not incoherent:
        return "PASSED", "PASSED: " + report, None

    worst: VerifierCheck | None
    if concrete:
        worst = min(concrete, key=lambda c: (_RANK[severity_of(c)], concrete.index(c)))
        status: VerifierStatus = "FAILED"
        defect_type: DefectType = worst.kind
        severity = severity_of(worst)
        fix = _fix(worst, failing_tests)
    else:
        worst = failed[0] if failed else None
        status = "RETRY"
        defect_type = "coherence"
        severity = "medium"
        fix = _coherence_fix(coherence)

    problems = [_problem(c) for c in (concrete or failed)]
    if incoherent:
        problems.append(_coherence_problem(coherence))
    description = _description(problems, failing_tests)
    metadata: dict[str, object] = {
        "failing_tests": list(failing_tests),
        "failed_checks": [c.name for c in failed],
    }
    if worst is not None and stopped_reason(worst):
        metadata["stopped"] = stopped_reason(worst)
    if coherence is not None:
        metadata["coherent"] = coherence[0]
        if coherence[2]:
            metadata["coherence_missing"] = list(coherence[2])
    capsule = DefectCapsule(
        defect_id=defect_id,
        defect_type=defect_type,
        severity=severity,
        description=description,
        suggested_fix=fix,
        metadata=metadata,
    )
    return status, f"{status}: " + report, capsule


def _report(checks: list[VerifierCheck], coherence: Coherence | None, failing_tests: list[str]) -> str:
    lines = [f"{sum(c.passed for c in checks)} of {len(checks)} checks passed"]
    for c in checks:
        state = "not run" if c.details.startswith(NOT_RUN) else ("passed" if c.passed else "FAILED")
        first = _first_line(c.details)
        lines.append(f"- {c.name} ({c.kind}): {state}" + (f" — {first}" if first else ""))
    if coherence is not None:
        ok, why, missing = coherence
        lines.append(f"- coherence: {'yes' if ok else 'NO'}" + (f" — {_clip(why, MAX_PROBLEM_CHARS)}" if why else ""))
        lines.extend(f"  missing: {m}" for m in missing)
    if failing_tests:
        lines.append("failing tests: " + ", ".join(failing_tests))
    return "\n".join(lines)


def _problem(check: VerifierCheck) -> str:
    body = " ".join(check.details.split()) or "failed"
    return _clip(f"{check.name}: {body}", MAX_PROBLEM_CHARS)


def _coherence_problem(coherence: Coherence | None) -> str:
    assert coherence is not None
    _, why, missing = coherence
    text = "coherence: the change does not meet the acceptance criteria"
    if why:
        text += f" — {why}"
    if missing:
        text += "; missing: " + "; ".join(missing)
    return _clip(" ".join(text.split()), MAX_PROBLEM_CHARS)


def _description(problems: list[str], failing_tests: list[str]) -> str:
    shown = []
    if failing_tests:  # the most concrete thing a builder can act on comes first
        ids = ", ".join(failing_tests[:MAX_TEST_IDS_SHOWN])
        more = f" (+{len(failing_tests) - MAX_TEST_IDS_SHOWN} more)" if len(failing_tests) > MAX_TEST_IDS_SHOWN else ""
        shown.append(_clip(f"failing tests: {ids}", MAX_PROBLEM_CHARS) + more)
    shown += problems[:MAX_PROBLEMS]
    if len(problems) > MAX_PROBLEMS:
        shown.append(f"... and {len(problems) - MAX_PROBLEMS} more problems")
    return _clip("\n".join(shown), MAX_DESCRIPTION_CHARS)


def _fix(check: VerifierCheck, failing_tests: list[str]) -> str:
    reason = stopped_reason(check)
    if reason == "timeout":
        return (
            f"{check.name} ran out of time: look for an infinite loop, a sleep, a blocking read or "
            "a network call (the sandbox has no network) in the code or its tests."
        )
    if reason == "memory":
        return f"{check.name} ran out of memory: avoid huge allocations or unbounded growth."
    if reason == "cpu":
        return f"{check.name} used up its CPU time: look for an infinite loop or a far too slow algorithm."
    if reason:
        return f"{check.name} was killed ({reason}): make sure the code does not crash or kill itself."
    if check.kind == "test":
        if NO_TESTS in check.details:
            return "Add tests the runner can find: test_*.py files with test_* functions."
        if failing_tests:
            return "Fix the code so these tests pass (do not weaken the tests): " + ", ".join(
                failing_tests[:MAX_TEST_IDS_SHOWN]
            )
        return "Make the test suite run: fix the import or syntax error its output shows."
    if check.kind == "lint":
        return f"Fix the {check.name} findings listed, starting with syntax errors and undefined names."
    if check.kind == "config":
        return (
            "Undo your changes to the files that configure the checks (conftest.py, pytest or ruff "
            "settings, noqa comments): the verifier uses its own configuration. Fix the code instead."
        )
    return f"Make the probe {check.name} succeed (exit 0)."


def _coherence_fix(coherence: Coherence | None) -> str:
    if coherence is None or not coherence[2]:
        return "Change the code so it does what the roadmap item asks and meets its acceptance criteria."
    return "Meet these acceptance criteria: " + "; ".join(coherence[2])


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return _clip(line.strip(), 200)
    return ""


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
