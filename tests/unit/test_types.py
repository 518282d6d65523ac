"""The type check (issue 36): mypy on the public API (actors/__init__, actors/sdk), the facts
(events/), the views (projections/) and the pure cores .importlinter lists, as pyproject.toml's
[tool.mypy] names them. A type error there fails this test with mypy's own report.

Cold (a fresh clone in CI, no .mypy_cache) it took 11 s on 2 cores (Nov 2026): the modules these
import are analysed silently, and torch, transformers, Ray and the like are skipped (as Any);
a warm cache, a few seconds."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).parents[2]


def test_the_checked_modules_are_the_pure_cores_and_the_public_api():
    files = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["files"]
    assert {"actors/__init__.py", "actors/sdk.py", "events", "projections"} <= set(files)
    cores = (ROOT / ".importlinter").read_text().split("[importlinter:contract:pure-cores]")[1]
    listed = cores.split("source_modules =")[1].split("forbidden_modules")[0].split()
    for module in listed:  # a pure core added to the contract is type-checked too
        path = module.replace(".", "/")
        assert f"{path}.py" in files or path in files, f"{module} is a pure core but not in [tool.mypy] files"
    for name in files:
        assert (ROOT / name).exists(), name


def test_mypy_finds_no_type_error():
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-error-summary", "--hide-error-context"],
        check=False, cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, f"mypy (pyproject.toml [tool.mypy]):\n{done.stdout}{done.stderr}"
