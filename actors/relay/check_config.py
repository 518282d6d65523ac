"""What configures the Verifier's checks, and a builder turn that changed it (issue 34), pure.

The Verifier runs ruff, pylint and pytest with its own configuration (actors.relay.checks),
so a `conftest.py`, a `ruff.toml` or a `# noqa` the builder writes cannot change a verdict.
Writing one is still a fact worth a defect of its own: a builder that cannot make a test
pass and reaches for the test runner's configuration instead is told so, by name, rather
than seeing its change silently ignored. `check_config_check` is that check ("check-config",
kind "config"): it compares the files a roadmap item started from with those after the turn
and fails naming every file that now configures the checks differently, unless the item
allows it (`allow_check_config: true` in the roadmap, for an item whose work is the
configuration). A turn that touched none of them gets no such check at all, so the verdicts
of relays recorded before it existed replay unchanged.

Counted as configuring the checks:
- any `conftest.py`; `pytest.ini`, `.pytest.ini`, `ruff.toml`, `.ruff.toml`, `pylintrc`,
  `.pylintrc`, `.flake8`; `sitecustomize.py`, `usercustomize.py`, a `pytest.py` or
  `_pytest/` that would stand in for pytest, and `*.pth` files;
- the pytest, ruff, pylint and flake8 sections of `pyproject.toml`, `setup.cfg` and
  `tox.ini` (the rest of those files is the builder's to change);
- suppression comments added to a Python file: `# noqa`, `# ruff: noqa`, `# flake8: noqa`,
  `# pylint: disable`.
"""

from __future__ import annotations

import configparser
import re
import tomllib
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from actors.relay.events import VerifierCheck

NAME = "check-config"
CONFIG_FILES = frozenset(
    {
        "conftest.py", "pytest.ini", ".pytest.ini", "ruff.toml", ".ruff.toml", "pylintrc", ".pylintrc",
        ".flake8", "sitecustomize.py", "usercustomize.py", "pytest.py",
    }
)  # fmt: skip
SECTIONED = frozenset({"pyproject.toml", "setup.cfg", "tox.ini"})
TOOLS = ("pytest", "ruff", "pylint", "flake8")
SUPPRESSION = re.compile(r"#\s*(?:noqa\b|(?:ruff|flake8)\s*:\s*noqa\b|pylint\s*:\s*disable)", re.IGNORECASE)
MAX_NAMED = 8


def config_changes(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    """The files whose check configuration differs between `before` and `after`, each as
    `path` or `path (what)`, in path order. Empty when none does."""
    found: list[str] = []
    for path in sorted(set(before) | set(after)):
        old, new = before.get(path), after.get(path)
        if old == new:
            continue
        p = PurePosixPath(path)
        if p.name in CONFIG_FILES or p.suffix == ".pth" or "_pytest" in p.parts[:-1]:
            found.append(f"{path} ({_how(old, new)})")
        elif p.name in SECTIONED:
            if _sections(p.name, old) != _sections(p.name, new):
                found.append(f"{path} (its {'/'.join(TOOLS)} settings)")
        elif p.suffix == ".py" and _suppressions(new) > _suppressions(old):
            found.append(f"{path} (suppression comments added: noqa / pylint: disable)")
    return found


def check_config_check(
    before: Mapping[str, str], after: Mapping[str, str], *, allowed: bool = False
) -> VerifierCheck | None:
    """The failed "check-config" check when the turn changed what configures the checks and
    the item does not allow it; None otherwise (no check at all)."""
    if allowed:
        return None
    changed = config_changes(before, after)
    if not changed:
        return None
    named = "; ".join(changed[:MAX_NAMED]) + (f"; and {len(changed) - MAX_NAMED} more" if len(changed) > MAX_NAMED else "")
    details = (
        f"the builder changed what configures the checks: {named}. The verifier runs with its own "
        "configuration, so these changes cannot make a check pass; undo them and fix the code."
    )
    return VerifierCheck(name=NAME, kind="config", passed=False, details=details)


def untrusted_conftests(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    """The conftest.py files the turn wrote or changed: the Verifier leaves them out of the
    copy pytest runs in."""
    return sorted(p for p, text in after.items() if PurePosixPath(p).name == "conftest.py" and before.get(p) != text)


def _how(old: str | None, new: str | None) -> str:
    return "added" if old is None else "deleted" if new is None else "changed"


def _suppressions(text: str | None) -> int:
    return len(SUPPRESSION.findall(text or ""))


def _sections(name: str, text: str | None) -> Any:
    """The check tools' settings in a pyproject.toml, setup.cfg or tox.ini; the whole text
    when it does not parse (a broken file is a change like any other)."""
    if text is None:
        return None
    if name == "pyproject.toml":
        try:
            tool = tomllib.loads(text).get("tool", {})
        except tomllib.TOMLDecodeError:
            return text
        return {k: tool.get(k) for k in TOOLS} if isinstance(tool, dict) else text
    parser = configparser.RawConfigParser(strict=False, interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return text
    return {
        s: dict(parser.items(s))
        for s in parser.sections()
        if any(s == t or s.startswith((f"{t}:", f"tool:{t}", f"{t}.")) for t in TOOLS)
    }
