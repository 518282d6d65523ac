"""The Verifier's checks (seed 004): static analysis (ruff; pylint where the workspace
configures it), the test suite (pytest, read from its JUnit XML report) and domain probes
(commands: exit 0 passes). Each runs in the sandbox and comes back as a `VerifierCheck`,
plus the structured findings the verdict and the defect capsule are made of.

A command the sandbox stopped (timeout, CPU, memory, a signal) is a failed check saying so,
never a hang. A tool that is not installed is a check that did not run: it passes, and its
details say "not run: ..." so the report shows it. Machine-readable reports go to a
temporary folder outside the workspace, and the tools are told to leave no caches in it
(the workspace is a git tree the relay records).

Each tool runs with the Verifier's own configuration, never the workspace's: the builder
writes the workspace, and a `conftest.py` that turns failures into passes, a `ruff.toml` or a
`# ruff: noqa` would otherwise decide its own verdict. ruff runs `--isolated` with the rule
selection given here and `--ignore-noqa`; pytest with its own ini (`-c`), `--confcutdir`
at the workspace, no plugin autoloading and, when asked, `--noconftest`; Python with `-P`, so
a `pytest.py` in the workspace cannot stand in for pytest; pylint (where the workspace asks
for it) with its own rcfile, errors only. What the builder changed in those files is a
check of its own (actors.relay.check_config).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from actors.relay.sandbox import SandboxPolicy, SandboxResult, describe_stop, run_sandboxed
from actors.relay.verdict import NO_TESTS, NOT_RUN, STOPPED
from actors.relay.events import DefectType, VerifierCheck

MAX_ISSUES_SHOWN = 5  # findings spelled out in a check's details
MAX_DETAILS_CHARS = 1_500
OUTPUT_TAIL_CHARS = 600
PYTEST_EXIT = {2: "interrupted (usually a collection error)", 3: "internal error", 4: "usage error"}
PYLINT_CONFIGS = (".pylintrc", "pylintrc")
# The workspace's tests run with pytest alone, not with every plugin the Verifier's
# environment happens to hold (they cost seconds a run and can leave files behind).
PYTEST_ENV = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
# The Verifier's pytest configuration (its own ini; the workspace's is never read). The
# workspace root is importable (`pythonpath`), as `python -m pytest` would make it.
PYTEST_INI = "[pytest]\npythonpath = {root}\naddopts =\n"
# Ruff's rules: its long-standing defaults (syntax errors, undefined names, unused imports,
# ...) -- bugs, not style a builder would churn on.
DEFAULT_RUFF_SELECT = ("E4", "E7", "E9", "F")
PYLINT_RC = "[MAIN]\nload-plugins=\n\n[MESSAGES CONTROL]\ndisable=all\nenable=E,F\n"


# -- ruff ----------------------------------------------------------------------------------------


def find_tool(name: str) -> str | None:
    """A tool next to the running Python (its venv) first, then on PATH."""
    local = Path(sys.executable).parent / name
    if local.is_file():
        return str(local)
    return shutil.which(name)


def run_ruff(
    root: Path,
    policy: SandboxPolicy | None = None,
    *,
    executable: str | None = None,
    select: Sequence[str] = DEFAULT_RUFF_SELECT,
    ignore: Sequence[str] = (),
) -> tuple[VerifierCheck, list[dict[str, Any]]]:
    """`ruff check` over the workspace with the rules `select` minus `ignore`: `--isolated`
    (no ruff.toml or pyproject of the workspace's, nor any above it) and `--ignore-noqa`
    (no `# noqa` or `# ruff: noqa` of the builder's silences a finding)."""
    ruff = executable or find_tool("ruff")
    if ruff is None or not Path(ruff).is_file():
        return _not_run("ruff", "lint", "ruff is not installed (not next to Python, not on PATH)"), []
    with tempfile.TemporaryDirectory(prefix="chorus-ruff-") as tmp:
        report = Path(tmp) / "ruff.json"
        argv = [ruff, "check", "--output-format", "json", "--output-file", str(report), "--no-cache"]
        argv += ["--isolated", "--ignore-noqa", "--select", ",".join(select)]
        if ignore:
            argv += ["--ignore", ",".join(ignore)]
        result = run_sandboxed([*argv, "."], root, policy or SandboxPolicy(), writable=[tmp])
        if result.killed_by:
            return _stopped("ruff", "lint", result, policy), []
        raw = _read_json(report)
    if result.returncode not in (0, 1) or not isinstance(raw, list):
        return _broken("ruff", "lint", result, "ruff did not produce its report"), []
    issues = [_ruff_issue(item, root) for item in raw if isinstance(item, dict)]
    passed = not issues and result.returncode == 0
    details = "no findings" if passed else _issues_text(issues)
    return _check("ruff", "lint", passed, details, result), issues


def _ruff_issue(item: dict[str, Any], root: Path) -> dict[str, Any]:
    where = item.get("location") or {}
    return {
        "code": item.get("code") or "invalid-syntax",
        "message": str(item.get("message", "")),
        "path": _relative(str(item.get("filename", "")), root),
        "line": where.get("row"),
        "column": where.get("column"),
        "fixable": item.get("fix") is not None,
    }


# -- pylint --------------------------------------------------------------------------------------


def pylint_configured(root: Path) -> bool:
    """Whether the workspace asks for pylint: a pylintrc, or a pylint section in
    pyproject.toml or setup.cfg."""
    if any((root / name).is_file() for name in PYLINT_CONFIGS):
        return True
    return "[tool.pylint" in _text(root / "pyproject.toml") or "[pylint" in _text(root / "setup.cfg")


def run_pylint(
    root: Path, policy: SandboxPolicy | None = None, *, force: bool = False, executable: str | None = None
) -> tuple[VerifierCheck, list[dict[str, Any]]] | None:
    """pylint over the workspace, only where the workspace asks for it (or `force`); None
    otherwise. It runs with the Verifier's own rcfile (errors and fatal messages only, no
    plugins): any message it reports fails the check."""
    if not (force or pylint_configured(root)):
        return None
    pylint = executable or find_tool("pylint")
    if pylint is None or not Path(pylint).is_file():
        return _not_run("pylint", "lint", "pylint is configured but not installed"), []
    with tempfile.TemporaryDirectory(prefix="chorus-pylint-") as tmp:
        report = Path(tmp) / "pylint.json"
        rcfile = Path(tmp) / "pylintrc"
        rcfile.write_text(PYLINT_RC, encoding="utf-8")
        argv = [pylint, f"--rcfile={rcfile}", "--recursive=y", "--output-format=json", f"--output={report}", "."]
        result = run_sandboxed(argv, root, policy or SandboxPolicy(), writable=[tmp])
        if result.killed_by:
            return _stopped("pylint", "lint", result, policy), []
        raw = _read_json(report)
    if result.returncode & 32 or not isinstance(raw, list):  # 32: usage error
        return _broken("pylint", "lint", result, "pylint did not produce its report"), []
    issues = [
        {
            "code": item.get("message-id") or item.get("symbol") or "",
            "symbol": item.get("symbol", ""),
            "message": str(item.get("message", "")),
            "path": _relative(str(item.get("path", "")), root),
            "line": item.get("line"),
            "column": item.get("column"),
        }
        for item in raw
        if isinstance(item, dict)
    ]
    passed = not issues and result.returncode == 0
    return _check("pylint", "lint", passed, "no findings" if passed else _issues_text(issues), result), issues


# -- pytest --------------------------------------------------------------------------------------


def run_pytest(
    root: Path,
    policy: SandboxPolicy | None = None,
    tests: Sequence[str] | None = None,
    *,
    python: str | None = None,
    conftest: bool = True,
) -> tuple[VerifierCheck, list[str]]:
    """The workspace's tests (or the `tests` paths / node ids in it), run with `python -P -m
    pytest` and the Verifier's own ini, the workspace root importable. `conftest` False:
    no conftest.py is loaded (`--noconftest`). Returns the check and the failing test ids
    (`path::Class::name`, collection errors as the file's path). Collecting no test at all
    fails: a builder must not pass by deleting its tests."""
    policy = policy or SandboxPolicy()
    with tempfile.TemporaryDirectory(prefix="chorus-pytest-") as tmp:
        report = Path(tmp) / "junit.xml"
        ini = Path(tmp) / "pytest.ini"
        ini.write_text(PYTEST_INI.format(root=root.resolve()), encoding="utf-8")
        argv = [
            python or sys.executable, "-B", "-P", "-m", "pytest", "-q",
            "-c", str(ini),  # the Verifier's ini: no pytest.ini, tox.ini, setup.cfg or pyproject of the workspace
            "-p", "no:cacheprovider",  # it would leave .pytest_cache in the workspace
            "--continue-on-collection-errors",  # one broken test file must not hide the rest
            f"--junitxml={report}", "-o", "junit_family=xunit1",
            f"--rootdir={root}", f"--confcutdir={root}",
            *(() if conftest else ("--noconftest",)),
        ]  # fmt: skip
        result = run_sandboxed([*argv, *(tests or [])], root, policy, extra_env=PYTEST_ENV, writable=[tmp])
        counts, failures = _read_junit(report, root)
    failing = [test_id for test_id, _ in failures]
    if result.killed_by:
        return _stopped("pytest", "test", result, policy, failing), failing
    if result.returncode == 5 or (result.returncode == 0 and counts is not None and counts["tests"] == 0):
        return _check("pytest", "test", False, f"{NO_TESTS}: {_tail(result)}", result), []
    if counts is None or (result.returncode not in (0, 1, 2) and not failures):
        what = PYTEST_EXIT.get(result.returncode, "pytest did not run")
        return _broken("pytest", "test", result, what), failing
    if result.returncode == 0 and not failures:
        return _check("pytest", "test", True, _summary_line(result) or f"{counts['tests']} passed", result), []
    lines = [f"{len(failures)} of {counts.get('tests', 0)} tests failed"]
    lines += [f"{test_id}: {message}" for test_id, message in failures[:MAX_ISSUES_SHOWN]]
    if not failures:
        lines = [f"pytest exited {result.returncode}: {PYTEST_EXIT.get(result.returncode, 'failed')}", _tail(result)]
    return _check("pytest", "test", False, "\n".join(lines), result), failing


def _read_junit(report: Path, root: Path) -> tuple[dict[str, int] | None, list[tuple[str, str]]]:
    """(counts, [(failing test id, first line of its message)]); counts None without a report."""
    try:
        tree = ET.parse(report)
    except (OSError, ET.ParseError):
        return None, []
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite in tree.iter("testsuite"):
        for key in counts:
            counts[key] += int(suite.get(key, "0") or 0)
    failures = []
    for case in tree.iter("testcase"):
        bad = case.find("failure")
        if bad is None:
            bad = case.find("error")
        if bad is not None:
            message = bad.get("message") or ""
            if message in ("", "collection failure"):  # the reason is the traceback's last E line
                errors = [ln[1:].strip() for ln in (bad.text or "").splitlines() if ln.startswith("E ")]
                message = errors[-1] if errors else message or "error"
            message = " ".join(message.split())
            failures.append((_test_id(case, root), message[:200]))
    return counts, failures


def _test_id(case: ET.Element, root: Path) -> str:
    """pytest's node id from a JUnit (xunit1) test case: file::Class::name."""
    name = case.get("name", "")
    classname = case.get("classname", "")
    path = case.get("file")
    if not path:  # no file attribute: find the module the dotted class name starts with
        parts = classname.split(".") if classname else []
        for cut in range(len(parts), 0, -1):
            if (root / Path(*parts[:cut])).with_suffix(".py").is_file():
                path = "/".join(parts[:cut]) + ".py"
                break
    if not path:
        return "::".join(p for p in (classname, name) if p)
    module = path[:-3].replace("/", ".") if path.endswith(".py") else path
    classes = classname[len(module) :].strip(".") if classname.startswith(module) else ""
    if not classname and name.replace(".", "/") + ".py" == path:  # a collection error
        return path
    return "::".join(p for p in (path, *classes.split("."), name) if p)


def _summary_line(result: SandboxResult) -> str:
    lines = [line.strip("= ") for line in result.stdout.splitlines() if line.strip()]
    return lines[-1] if lines else ""


# -- probes --------------------------------------------------------------------------------------


def run_probe(name: str, argv: Sequence[str], root: Path, policy: SandboxPolicy | None = None) -> VerifierCheck:
    """A domain probe: any command, in the workspace, in the sandbox. Exit 0 passes."""
    if not argv:
        raise ValueError(f"probe {name!r} has no command")
    result = run_sandboxed(list(argv), root, policy or SandboxPolicy())
    if result.killed_by:
        return _stopped(name, "probe", result, policy)
    if result.returncode == 0:
        return _check(name, "probe", True, "exit 0", result)
    return _check(name, "probe", False, f"exit {result.returncode}: {_tail(result)}", result)


# -- shared --------------------------------------------------------------------------------------


def _check(name: str, kind: DefectType, passed: bool, details: str, result: SandboxResult) -> VerifierCheck:
    if result.note:  # a weaker sandbox is said, every time
        details += f"\n(sandbox: {result.note})"
    return VerifierCheck(name=name, kind=kind, passed=passed, details=_clip(details))


def _stopped(
    name: str, kind: DefectType, result: SandboxResult, policy: SandboxPolicy | None, failing: Sequence[str] = ()
) -> VerifierCheck:
    details = f"{STOPPED} ({result.killed_by}): {describe_stop(result, policy or SandboxPolicy())}"
    if failing:
        details += "\nfailing before it stopped: " + ", ".join(failing[:MAX_ISSUES_SHOWN])
    tail = _tail(result)
    if tail:
        details += "\n" + tail
    return _check(name, kind, False, details, result)


def _broken(name: str, kind: DefectType, result: SandboxResult, what: str) -> VerifierCheck:
    return _check(name, kind, False, f"{what} (exit {result.returncode}): {_tail(result)}", result)


def _not_run(name: str, kind: DefectType, why: str) -> VerifierCheck:
    return VerifierCheck(name=name, kind=kind, passed=True, details=f"{NOT_RUN} {why}")


def _issues_text(issues: list[dict[str, Any]]) -> str:
    lines = [f"{len(issues)} finding{'s' if len(issues) != 1 else ''}"]
    for issue in issues[:MAX_ISSUES_SHOWN]:
        lines.append(f"{issue['path']}:{issue['line']}:{issue['column']}: {issue['code']} {issue['message']}")
    return "\n".join(lines)


def _tail(result: SandboxResult) -> str:
    text = (result.stderr.strip() or result.stdout.strip())[-OUTPUT_TAIL_CHARS:]
    return text


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _relative(path: str, root: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(root.resolve()))
    except (ValueError, OSError):
        return path


def _clip(text: str) -> str:
    return text if len(text) <= MAX_DETAILS_CHARS else text[: MAX_DETAILS_CHARS - 3] + "..."
