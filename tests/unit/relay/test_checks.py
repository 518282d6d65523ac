"""The Verifier's checks on small real workspaces: pytest's failing ids, a suite that
collects nothing, a test that hangs, opens a socket or wants a secret; ruff; probes."""

from __future__ import annotations

import socket
import textwrap
from pathlib import Path

import pytest

from actors.relay.checks import find_tool, run_probe, run_pylint, run_pytest, run_ruff
from actors.relay.sandbox import SandboxPolicy
from actors.relay.verdict import NO_TESTS, NOT_RUN, decide_verdict, stopped_reason

POLICY = SandboxPolicy(timeout_s=20, cpu_s=20)


def workspace(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def test_pytest_names_the_failing_tests(tmp_path):
    root = workspace(
        tmp_path,
        {
            "solution.py": "def add(a, b):\n    return a - b\n",
            "tests/test_add.py": """
                from solution import add

                def test_zero():
                    assert add(0, 0) == 0

                class TestAdd:
                    def test_sum(self):
                        assert add(2, 3) == 5
            """,
            "tests/test_broken.py": "import no_such_module_chorus\n",
        },
    )
    check, failing = run_pytest(root, POLICY)
    assert check.name == "pytest" and check.kind == "test" and not check.passed
    assert failing == ["tests/test_broken.py", "tests/test_add.py::TestAdd::test_sum"]  # pytest's order
    assert "no_such_module_chorus" in check.details  # a collection error says why
    assert sorted(p.name for p in root.iterdir()) == ["solution.py", "tests"]  # no caches left behind


def test_pytest_passes_a_passing_suite_and_runs_only_the_tests_asked_for(tmp_path):
    root = workspace(
        tmp_path,
        {
            "test_one.py": "def test_ok():\n    assert True\n",
            "test_two.py": "def test_bad():\n    assert False\n",
        },
    )
    check, failing = run_pytest(root, POLICY, tests=["test_one.py"])
    assert check.passed and failing == []
    assert "1 passed" in check.details


def test_no_tests_collected_is_a_failure_of_its_own(tmp_path):
    root = workspace(tmp_path, {"solution.py": "X = 1\n"})
    check, failing = run_pytest(root, POLICY)
    assert not check.passed and failing == []
    assert check.details.startswith(NO_TESTS)


def test_a_test_that_sleeps_forever_becomes_a_critical_defect(tmp_path):
    root = workspace(tmp_path, {"test_hang.py": "import time\n\ndef test_hang():\n    time.sleep(1000)\n"})
    check, failing = run_pytest(root, SandboxPolicy(timeout_s=2))
    assert not check.passed and stopped_reason(check) == "timeout"
    status, report, capsule = decide_verdict([check], None, failing, defect_id="d-hang")
    assert status == "FAILED" and capsule is not None
    assert capsule.defect_type == "test" and capsule.severity == "critical"
    assert capsule.metadata["stopped"] == "timeout"
    assert "time" in (capsule.suggested_fix or "")


def test_tests_that_open_a_socket_or_want_a_secret_fail_as_defects(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret-value-123")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    root = workspace(
        tmp_path,
        {
            "test_world.py": f"""
                import os, socket

                def test_secret():
                    assert os.environ["OPENAI_API_KEY"]

                def test_socket():
                    socket.create_connection(("127.0.0.1", {port}), timeout=1).close()
            """
        },
    )
    try:
        check, failing = run_pytest(root, POLICY)
    finally:
        listener.close()
    assert not check.passed
    assert "sk-test-secret-value-123" not in check.details
    assert failing == ["test_world.py::test_secret", "test_world.py::test_socket"]  # no network in the sandbox
    status, _, capsule = decide_verdict([check], (True, "fine", []), failing, defect_id="d-world")
    assert status == "FAILED" and capsule is not None
    assert capsule.severity == "high" and capsule.metadata["failing_tests"] == failing


def test_ruff_that_is_not_installed_is_reported_as_not_run(tmp_path):
    check, issues = run_ruff(tmp_path, POLICY, executable=str(tmp_path / "no-ruff"))
    assert check.passed and issues == []
    assert check.details.startswith(NOT_RUN) and "ruff is not installed" in check.details


def test_ruff_finds_an_undefined_name():
    ruff = find_tool("ruff")
    assert ruff is not None, "ruff is a dependency of Chorus (pyproject.toml): it must be next to Python"
    root = Path(__import__("tempfile").mkdtemp(prefix="chorus-ruff-ws-"))
    workspace(root, {"good.py": "def f():\n    return 1\n", "pkg/bad.py": "def g():\n    return missing_name\n"})
    check, issues = run_ruff(root, POLICY, executable=ruff)
    assert not check.passed
    assert [(i["code"], i["path"], i["line"]) for i in issues] == [("F821", "pkg/bad.py", 2)]
    assert "pkg/bad.py:2" in check.details
    (root / "pkg" / "bad.py").write_text("def g():\n    return 2\n")
    check, issues = run_ruff(root, POLICY, executable=ruff)
    assert check.passed and issues == []
    assert not (root / ".ruff_cache").exists()


def test_pylint_runs_only_where_configured(tmp_path):
    assert run_pylint(tmp_path, POLICY) is None
    (tmp_path / ".pylintrc").write_text("[MAIN]\n")
    result = run_pylint(tmp_path, POLICY, executable=str(tmp_path / "no-pylint"))
    assert result is not None
    check, issues = result
    assert check.passed and check.details.startswith(NOT_RUN) and issues == []


def test_probes_pass_on_exit_zero_and_are_stopped_when_they_hang(tmp_path):
    ok = run_probe("true", ["sh", "-c", "exit 0"], tmp_path, POLICY)
    bad = run_probe("imports", ["sh", "-c", "echo cannot import thing >&2; exit 2"], tmp_path, POLICY)
    hang = run_probe("server", ["sleep", "1000"], tmp_path, SandboxPolicy(timeout_s=1))
    assert ok.passed and ok.kind == "probe"
    assert not bad.passed and "exit 2" in bad.details and "cannot import thing" in bad.details
    assert not hang.passed and stopped_reason(hang) == "timeout"
    with pytest.raises(ValueError, match="no command"):
        run_probe("empty", [], tmp_path, POLICY)
