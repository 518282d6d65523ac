"""Checks the builder cannot rewrite (issue 34): the Verifier decides with its own
configuration. A builder-written conftest.py that turns failures into passes, a ruff.toml
or a `# ruff: noqa` change no verdict, and writing them is a "check-config" defect of its
own unless the roadmap item allows it."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from actors.relay.check_config import (
    check_config_check,
    config_changes,
    untrusted_conftests,
)
from actors.relay.checks import run_pytest, run_ruff
from actors.relay.roadmap import RoadmapItem, parse_roadmap
from actors.relay.sandbox import SandboxPolicy
from actors.relay.scheduler import RelayState
from actors.relay.verdict import decide_verdict
from actors.relay.verifier import Verifier
from actors.runtime.perform import LiveEffects
from actors.relay.events import BatonPacket

POLICY = SandboxPolicy(timeout_s=30, cpu_s=30)
MUL = {
    "solution.py": "def mul(a, b):\n    return a + b\n",
    "test_solution.py": "from solution import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n",
}
# What the attack wrote: every failing test reported as passed.
CHEATING_CONFTEST = textwrap.dedent(
    """
    import pytest

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(item, call):
        outcome = yield
        report = outcome.get_result()
        report.outcome = "passed"
        report.longrepr = None
    """
)


def put(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def verifying(before: dict[str, str], after: dict[str, str], item: RoadmapItem) -> RelayState:
    return RelayState(
        task_id="t",
        items=[item],
        item_status=["pending"],
        status="verifying",
        turn_number=1,
        last_turn_id="t:turn:1",
        batons=[BatonPacket(response_text="", builder_summary="")],
        files=after,
        item_files=before,
    )


def verify(before: dict[str, str], after: dict[str, str], item: RoadmapItem | None = None):
    verifier = Verifier(coherence="off", lint=False, policy=POLICY)
    state = verifying(before, after, item or RoadmapItem(title="multiply"))
    return verifier.verify(state, Checks(verifier))


class Checks:
    """The Verifier's effects with only its checks (run live; RecordedEffects numbers them)."""

    def __init__(self, verifier: Verifier) -> None:
        self.live = LiveEffects(None, verifier.invoker())

    def tool(self, name, args, _call_index):
        return self.live.tool(name, args, 0)


def test_the_cheating_conftest_really_cheats_under_a_plain_pytest(tmp_path):
    """The attack, to know the test below tests something: pytest with conftests on."""
    root = put(tmp_path, {**MUL, "conftest.py": CHEATING_CONFTEST})
    assert run_pytest(root, POLICY)[0].passed
    check, failing = run_pytest(root, POLICY, conftest=False)
    assert not check.passed and failing == ["test_solution.py::test_mul"]


def test_a_builder_written_conftest_no_longer_passes_a_wrong_mul():
    done = verify(MUL, {**MUL, "conftest.py": CHEATING_CONFTEST})
    assert done.status == "FAILED"
    by_name = {c.name: c for c in done.checks}
    assert not by_name["pytest"].passed  # the conftest was left out of pytest's copy
    assert not by_name["check-config"].passed and by_name["check-config"].kind == "config"
    assert "conftest.py (added)" in by_name["check-config"].details
    assert done.defect_capsule is not None and "test_solution.py::test_mul" in done.defect_capsule.description


def test_pytest_settings_of_the_workspace_decide_nothing():
    """addopts in pytest.ini / pyproject that would deselect the failing test are not read."""
    cheat = {
        "pytest.ini": "[pytest]\naddopts = -k 'not mul' -p no:python\n",
        "pyproject.toml": "[tool.pytest.ini_options]\naddopts = '--co'\n",
        "pytest.py": "import sys\nsys.exit(0)\n",  # a stand-in for pytest itself
    }
    done = verify(MUL, {**MUL, **cheat})
    by_name = {c.name: c for c in done.checks}
    assert done.status == "FAILED" and not by_name["pytest"].passed
    assert "pytest.ini (added)" in by_name["check-config"].details
    assert "pyproject.toml" in by_name["check-config"].details


def test_an_item_may_allow_the_checks_configuration_and_a_conftest_the_person_had_is_kept():
    fixture = "import pytest\n\n\n@pytest.fixture\ndef six():\n    return 6\n"
    files = {
        "conftest.py": fixture,
        "solution.py": "def mul(a, b):\n    return a * b\n",
        "test_solution.py": "from solution import mul\n\n\ndef test_mul(six):\n    assert mul(2, 3) == six\n",
    }
    assert verify(files, files).status == "PASSED"  # the item found the conftest: trusted
    allowed = RoadmapItem(title="add a fixture", allow_check_config=True)
    before = {k: v for k, v in files.items() if k != "conftest.py"}
    assert verify(before, files, allowed).status == "PASSED"
    assert verify(before, files).status == "FAILED"


def test_ruff_config_and_noqa_in_the_workspace_do_not_change_the_lint_verdict(tmp_path):
    code = "import os  # noqa: F401\n\n\ndef f():\n    return 1\n"
    for extra in (
        {"bad.py": code},
        {"bad.py": "# ruff: noqa\n" + code},
        {"bad.py": code, "ruff.toml": "lint.ignore = ['F401']\nexclude = ['bad.py']\n"},
        {"bad.py": code, "pyproject.toml": "[tool.ruff]\nlint.select = []\n"},
    ):
        root = put(tmp_path / str(len(list(tmp_path.iterdir()))), extra)
        check, issues = run_ruff(root, POLICY)
        assert not check.passed and [i["code"] for i in issues] == ["F401"], extra


def test_config_changes_names_what_configures_the_checks():
    before = {
        "pyproject.toml": "[project]\nname = 'x'\n[tool.ruff]\nline-length = 100\n",
        "setup.cfg": "[metadata]\nname = x\n",
        "app.py": "import os  # noqa\n",
    }
    assert config_changes(before, before) == []
    same_tools = {**before, "pyproject.toml": "[project]\nname = 'y'\n[tool.ruff]\nline-length = 100\n"}
    assert config_changes(before, same_tools) == []  # the project's name is the builder's to change
    after = {
        "pyproject.toml": "[project]\nname = 'x'\n[tool.ruff]\nline-length = 200\n",
        "setup.cfg": "[metadata]\nname = x\n[tool:pytest]\naddopts = -q\n",
        "app.py": "import os  # noqa\nimport sys  # noqa: F401\n",
        "tests/conftest.py": "",
        "ruff.toml": "",
        "other.py": "x = 1  # a comment, not a pragma\n",
    }
    assert config_changes(before, after) == [
        "app.py (suppression comments added: noqa / pylint: disable)",
        "pyproject.toml (its pytest/ruff/pylint/flake8 settings)",
        "ruff.toml (added)",
        "setup.cfg (its pytest/ruff/pylint/flake8 settings)",
        "tests/conftest.py (added)",
    ]
    assert untrusted_conftests(before, after) == ["tests/conftest.py"]
    assert check_config_check(before, after, allowed=True) is None
    check = check_config_check(before, after)
    assert check is not None and check.name == "check-config" and not check.passed
    status, _, capsule = decide_verdict([check], None, [], defect_id="d")
    assert status == "FAILED" and capsule is not None and capsule.defect_type == "config"
    assert capsule.severity == "high" and "Undo" in (capsule.suggested_fix or "")


def test_the_roadmap_says_which_item_may_change_the_checks_configuration():
    roadmap = parse_roadmap(
        "items:\n  - title: set up pytest\n    allow_check_config: true\n  - title: write code\n", "r.yaml"
    )
    assert [i.allow_check_config for i in roadmap.items] == [True, False]
    assert "allow_check_config" not in roadmap.items[1].recorded()  # old logs replay unchanged
    assert roadmap.items[0].recorded()["allow_check_config"] is True
    with pytest.raises(ValueError, match="allow_check_config: must be true or false"):
        parse_roadmap("items:\n  - title: x\n    allow_check_config: maybe\n", "r.yaml")
